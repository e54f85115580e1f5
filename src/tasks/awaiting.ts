import type { InputRequest, TaskRow } from '../db/types.js';
import { ServiceError } from '../errors.js';
import { isTerminal } from './status.js';

/**
 * The questions task `row` waits for, in the order asked: none unless INPUT_REQUIRED.
 * `input_request` is the first of `input_requests`; a row that has only `input_request` (one
 * written before migration 0007) waits for that one question.
 */
export function outstandingQuestions(
  row: Pick<TaskRow, 'status' | 'input_request' | 'input_requests'>,
): InputRequest[] {
  const first = row.input_request;
  if (row.status !== 'input_required' || !first) return [];
  const all = row.input_requests;
  return Array.isArray(all) && all[0]?.key === first.key ? all : [first];
}

/**
 * The question of task `row` that answer `key` is for: TASK_TERMINAL once final,
 * NOT_AWAITING_INPUT when it waits for nothing or not for `key` (the message says which).
 */
export function checkAwaiting(row: TaskRow, key: string): InputRequest {
  const { status } = row;
  if (isTerminal(status)) throw new ServiceError('TASK_TERMINAL', `The task is already ${status}.`);
  const pending = outstandingQuestions(row);
  const question = pending.find((q) => q.key === key);
  if (question) return question;
  throw new ServiceError(
    'NOT_AWAITING_INPUT',
    pending.length > 0
      ? `The task is waiting for input ${pending.map((q) => JSON.stringify(q.key)).join(', ')}, not ${JSON.stringify(key)}.`
      : 'The task is not waiting for input.',
  );
}
