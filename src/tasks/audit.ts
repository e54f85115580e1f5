import type { Logger } from 'pino';
import { ServiceError } from '../errors.js';
import { isTaskId } from './validation.js';

/**
 * A task operation as its audit line follows it: its name, the task it names (if any), what
 * it runs, and `describe`, which names the task (when the request did not) and the outcome.
 */
export type AuditedCall<T> = [
  operation: string,
  taskId: string | null,
  run: () => Promise<T>,
  describe: (value: T) => [string | null, string, Record<string, unknown>?],
];

/**
 * The audit trail: one line per task operation, whether it succeeded, failed with a code, or
 * was refused by a face before reaching the service.
 */
export class AuditLog {
  constructor(private readonly log: Logger) {}

  /** The one audit line of a task operation; `principal` is null without a valid token. */
  line(
    principal: string | null,
    operation: string,
    taskId: string | null,
    outcome: string,
    /** More for the same line: a bulk operation's filter and counts. */
    detail?: Record<string, unknown>,
  ): void {
    this.log.info(
      { ...detail, audit: true, principal, operation, taskId, outcome },
      'task operation',
    );
  }

  /** An operation refused before the service: `taskId` is kept only when it has the shape of one. */
  refused(
    principal: string | null,
    operation: string,
    taskId: string | null,
    outcome: 'UNAUTHENTICATED' | 'FORBIDDEN',
  ): void {
    this.line(
      principal,
      operation,
      taskId !== null && isTaskId(taskId) ? taskId.toLowerCase() : null,
      outcome,
    );
  }

  /**
   * Runs the call and writes its line, as its `describe` says; a failure is written as its
   * code, or `error` when it has none.
   */
  async around<T>(principal: string, ...call: AuditedCall<T>): Promise<T> {
    const [operation, taskId, run, describe] = call;
    try {
      const value = await run();
      const [id, outcome, detail] = describe(value);
      this.line(principal, operation, id ?? taskId, outcome, detail);
      return value;
    } catch (err) {
      this.line(principal, operation, taskId, err instanceof ServiceError ? err.code : 'error');
      throw err;
    }
  }
}
