import type { ClientTask } from './task.js';

/**
 * A request the client could not carry out. `code` is the server's (§3: `UNAUTHENTICATED`,
 * `FORBIDDEN`, `NOT_FOUND`, `BAD_USER_INPUT`, `TASK_TERMINAL`…), or the client's own:
 * `UNREACHABLE` (no answer; `cause` says why) and `BAD_RESPONSE` (an answer that is not
 * GraphQL, `status` set).
 */
export class ClientError extends Error {
  override readonly name = 'ClientError';
  constructor(
    readonly code: string,
    message: string,
    options: { cause?: unknown; status?: number } = {},
  ) {
    super(message, { cause: options.cause });
    this.status = options.status;
  }
  /** The HTTP status of a `BAD_RESPONSE`. */
  readonly status: number | undefined;
}

/** `result()` of a task that ended `FAILED`: the task's own error code and message. */
export class TaskFailed extends Error {
  override readonly name = 'TaskFailed';
  readonly code: string;
  constructor(readonly task: ClientTask) {
    super(task.error?.message ?? `task ${task.id} failed`);
    this.code = task.error?.code ?? 'HANDLER_ERROR';
  }
}

/** `result()` of a task that ended `CANCELLED`. */
export class TaskCancelled extends Error {
  override readonly name = 'TaskCancelled';
  constructor(readonly task: ClientTask) {
    super(`task ${task.id} was cancelled`);
  }
}
