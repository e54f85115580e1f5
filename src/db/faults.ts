import type { Logger } from 'pino';
import { ServiceError } from '../errors.js';
import { READ_ONLY_SQL_TRANSACTION, ReadOnlyServer } from './writable.js';

/** What a client is told to wait before retrying while the database is unreachable. */
export const UNAVAILABLE_RETRY_AFTER_MS = 1_000;

/** Socket errors that mean the database cannot be reached, or the connection to it died. */
const NETWORK_CODES = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENETDOWN',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

/**
 * SQLSTATEs of a server that is going away, not answering in time or full: class 08
 * (connection exception), 57P01–57P03 (shutdown, crash, not accepting connections yet),
 * 57014 (statement timeout or cancel), 53300 (too many connections).
 */
const TRANSIENT_SQLSTATE = /^(08[0-9A-Z]{3}|57P0[123]|57014|53300)$/;

/** pg's and pg-pool's own messages for a dead, timed-out or unusable connection. */
const CONNECTION_MESSAGES = [
  'Connection terminated',
  'Query read timeout',
  'timeout exceeded when trying to connect',
  'is not queryable',
  'Connection terminated due to connection timeout',
];

/** True when `err` says the database is unreachable or slow, rather than refusing the query. */
export function isConnectionFault(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string' && (NETWORK_CODES.has(code) || TRANSIENT_SQLSTATE.test(code)))
    return true;
  return CONNECTION_MESSAGES.some((text) => err.message.includes(text));
}

/**
 * True when `err` is a server that does not take writes: a refusal (SQLSTATE 25006, "cannot
 * execute INSERT in a read-only transaction", "cannot execute LISTEN during recovery") or a
 * connection found on such a server. During a failover the name of the database points for a
 * while at a standby not yet promoted: a fault of the database, like an unreachable one.
 */
export function isReadOnlyFault(err: unknown): boolean {
  return (
    err instanceof ReadOnlyServer ||
    (err instanceof Error && (err as { code?: unknown }).code === READ_ONLY_SQL_TRANSACTION)
  );
}

/** The client's view of a database fault: coded, retryable, nothing of the cause. */
export class DatabaseUnavailable extends ServiceError {
  constructor(override readonly cause: Error) {
    super('SERVICE_UNAVAILABLE', 'The database is unavailable; try again shortly.', {
      retryAfterMs: UNAVAILABLE_RETRY_AFTER_MS,
    });
  }
}

/**
 * Turns connection and read-only faults into `DatabaseUnavailable` (every face answers it as
 * SERVICE_UNAVAILABLE) and logs their cause, at most once a second with a count of the rest,
 * so an outage under load does not flood the log. Other errors pass unchanged.
 */
export function faultClassifier(log: Logger): (err: unknown) => unknown {
  let lastLoggedAt = 0;
  let unlogged = 0;
  return (err) => {
    if (err instanceof DatabaseUnavailable || !(isConnectionFault(err) || isReadOnlyFault(err)))
      return err;
    const now = Date.now();
    if (now - lastLoggedAt >= 1_000) {
      log.warn({ err, alsoSince: unlogged }, 'database unavailable');
      lastLoggedAt = now;
      unlogged = 0;
    } else unlogged++;
    return new DatabaseUnavailable(err as Error);
  };
}
