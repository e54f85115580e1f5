/** The error codes of DESIGN §3: stable, visible to clients. */
export type ErrorCode =
  | 'UNAUTHENTICATED'
  | 'FORBIDDEN'
  | 'NOT_FOUND'
  | 'BAD_USER_INPUT'
  | 'TASK_TERMINAL'
  | 'NOT_AWAITING_INPUT'
  | 'IDEMPOTENCY_KEY_REUSED'
  // DESIGN §15: retryTask on a task that is not FAILED or CANCELLED.
  | 'TASK_NOT_RETRYABLE'
  // DESIGN §16: the same step name twice in one run (fails the attempt); a second, different
  // payload for a signal; a child task that failed or was cancelled, when not caught.
  | 'STEP_NAME_REUSED'
  | 'SIGNAL_ALREADY_SENT'
  | 'CHILD_FAILED'
  // DESIGN §12: limits and faults.
  | 'RATE_LIMITED'
  | 'SERVICE_UNAVAILABLE'
  | 'TOO_MANY_SUBSCRIPTIONS'
  | 'PAYLOAD_TOO_LARGE'
  | 'UNSUPPORTED_MEDIA_TYPE';

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

/** Longest description of a thrown non-Error kept in a message. */
const MAX_DESCRIPTION = 1_000;

/**
 * Turns whatever was thrown into an Error, so every catch can log a cause. Total: it never
 * throws, whatever the value (cycles, BigInt, symbols, proxies, getters or `toJSON` that
 * throw). An Error with a readable string message is returned as it is; anything else is
 * wrapped, with the original kept as `cause`.
 */
export function coerceError(thrown: unknown): Error {
  try {
    if (thrown instanceof Error && typeof thrown.message === 'string') return thrown;
  } catch {
    // A proxy that refuses its prototype, a message getter that throws: described below.
  }
  const message = typeof thrown === 'string' ? thrown : `Non-error thrown: ${describe(thrown)}`;
  return new Error(message, { cause: thrown });
}

/** A short, readable text for any value; never throws. */
function describe(value: unknown): string {
  try {
    switch (typeof value) {
      case 'bigint':
        return `${value}n`;
      case 'symbol':
        return String(value);
      case 'function':
        return `[function ${value.name || 'anonymous'}]`;
      case 'object':
        if (value === null) return 'null';
        return (json(value) ?? Object.prototype.toString.call(value)).slice(0, MAX_DESCRIPTION);
      default:
        return String(value);
    }
  } catch {
    return '[a value that cannot be described]';
  }
}

/** JSON with cycles and BigInts spelled out; `undefined` when a getter or toJSON throws. */
function json(value: object): string | undefined {
  const seen = new WeakSet<object>();
  try {
    return JSON.stringify(value, (_key, item: unknown) => {
      if (typeof item === 'bigint') return `${item}n`;
      if (typeof item === 'object' && item !== null) {
        if (seen.has(item)) return '[Circular]';
        seen.add(item);
      }
      return item;
    });
  } catch {
    return undefined;
  }
}
