import type { TaskRow } from '../db/types.js';
import { ServiceError } from '../errors.js';
import { isTerminal } from './status.js';

/**
 * Whether task `row` waits for the answer `key`: TASK_TERMINAL once final, NOT_AWAITING_INPUT
 * when it waits for nothing or for another key (the message says which).
 */
export function checkAwaiting(row: TaskRow, key: string): void {
  const { status } = row;
  if (isTerminal(status)) throw new ServiceError('TASK_TERMINAL', `The task is already ${status}.`);
  const pending = row.input_request?.key;
  if (status !== 'input_required' || pending !== key) {
    throw new ServiceError(
      'NOT_AWAITING_INPUT',
      status === 'input_required'
        ? `The task is waiting for input ${JSON.stringify(pending)}, not ${JSON.stringify(key)}.`
        : 'The task is not waiting for input.',
    );
  }
}
