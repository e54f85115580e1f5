/** The error codes of DESIGN §3: stable, visible to clients. */
export type ErrorCode =
  | 'UNAUTHENTICATED'
  | 'FORBIDDEN'
  | 'NOT_FOUND'
  | 'BAD_USER_INPUT'
  | 'TASK_TERMINAL'
  | 'NOT_AWAITING_INPUT'
  | 'IDEMPOTENCY_KEY_REUSED';

/**
 * An expected failure with a contract code. The faces show its message and code; anything
 * that is not a ServiceError is masked for clients and logged with its cause.
 */
export class ServiceError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: Record<string, unknown>,
  ) {
    super(message);
    this.name = 'ServiceError';
  }
}

export const notFound = (what = 'Task') => new ServiceError('NOT_FOUND', `${what} not found.`);

/** Turns whatever was thrown into an Error, so every catch can log a cause. */
export function coerceError(thrown: unknown): Error {
  if (thrown instanceof Error) return thrown;
  return new Error(typeof thrown === 'string' ? thrown : `Non-error thrown: ${JSON.stringify(thrown)}`);
}

/** Postgres SQLSTATE codes this project reacts to. */
export const PG_UNIQUE_VIOLATION = '23505';
