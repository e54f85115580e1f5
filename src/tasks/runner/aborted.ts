import type { Executor } from '../../db/types.js';
import { findStoredTask } from '../sql/find.js';

/** Why a running handler was stopped before it ended on its own. */
export type AbortCause =
  | 'cancelled'
  | 'expired'
  | 'timeout'
  | 'lease-lost'
  | 'shutdown'
  /** The task was suspended on its waits (DESIGN §16): the run ends, the task goes on. */
  | 'suspended';

/** The reason a handler's signal carries. */
export class TaskAbortedError extends Error {
  constructor(override readonly cause: AbortCause) {
    super(`task aborted: ${cause}`);
    this.name = 'AbortError';
  }
}

/**
 * Why a fenced write of task `id` found its lease gone: `cancelled` when the task is (a cancel
 * whose notification has not arrived yet), else `lease-lost`. Never rejects.
 */
export async function whyLost(db: Executor, id: string): Promise<AbortCause> {
  const row = await findStoredTask(db, id).catch(() => undefined);
  return row?.status === 'cancelled' ? 'cancelled' : 'lease-lost';
}
