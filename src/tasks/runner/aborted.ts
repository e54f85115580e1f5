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

/**
 * A handler's abort signal, made only once something asks for it: the handler of a quick task
 * often never reads `ctx.signal`, and an AbortController is among the costlier objects a run
 * makes. Aborted before it is made, it is made aborted.
 */
export class HandlerAbort {
  /** Why the handler was stopped, once it was. */
  reason: TaskAbortedError | undefined;
  private controller: AbortController | undefined;

  get aborted(): boolean {
    return this.reason !== undefined;
  }

  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.reason) this.controller.abort(this.reason);
    }
    return this.controller.signal;
  }

  /** Aborts with `reason` (once; later reasons are ignored). */
  abort(reason: TaskAbortedError): void {
    if (this.reason) return;
    this.reason = reason;
    this.controller?.abort(reason);
  }
}
