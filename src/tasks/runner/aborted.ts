/** Why a running handler was stopped before it ended on its own. */
export type AbortCause = 'cancelled' | 'expired' | 'timeout' | 'lease-lost' | 'shutdown';

/** The reason a handler's signal carries. */
export class TaskAbortedError extends Error {
  constructor(override readonly cause: AbortCause) {
    super(`task aborted: ${cause}`);
    this.name = 'AbortError';
  }
}
