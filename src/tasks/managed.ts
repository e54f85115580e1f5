import { ServiceError } from '../errors.js';
import { type RateLimit, rateLimitProblem } from './flow-control.js';
import type { TaskKind } from './kinds.js';
import type { StartRequest } from './requests.js';
import { type RetryPolicy, resolveRetry } from './retry.js';

/** How a new task's work is managed (DESIGN §14), checked and resolved against its kind. */
export interface ManagedWork {
  /** Not claimed before this instant; null: at once. */
  runAt: Date | null;
  priority: number;
  concurrencyKey: string | null;
  concurrencyLimit: number | null;
  /** DESIGN §17: as given (null: the owner is the key). */
  rateLimitKey: string | null;
  /** The task's own, else its kind's; null: its first start is not rate-limited. */
  rateLimit: RateLimit | null;
  retry: RetryPolicy;
}

/** A concurrency or rate limit key. */
const KEY = /^[\x20-\x7e]{1,255}$/;

function refuse(message: string): never {
  throw new ServiceError('BAD_USER_INPUT', message);
}

function integerIn(value: unknown, field: string, min: number, max: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max)
    refuse(`${field} must be an integer from ${min} to ${max}.`);
  return value;
}

/**
 * Checks the §14 fields of a start request and fills in the kind's defaults.
 * @param expiresAt when the task will expire: its first attempt may not be due after it
 * @throws ServiceError BAD_USER_INPUT naming the field at fault and its range
 */
export function resolveManagedWork(
  request: StartRequest,
  kind: TaskKind<any, any>,
  maxTtlMs: number,
  now: number,
  expiresAt: number,
): ManagedWork {
  if (request.runAt != null && request.delayMs != null) refuse('Give runAt or delayMs, not both.');
  let runAt: Date | null = null;
  if (request.runAt != null) {
    const at = request.runAt instanceof Date ? request.runAt : new Date(Number.NaN);
    if (Number.isNaN(at.getTime())) refuse('runAt must be an ISO 8601 date and time.');
    runAt = at;
  } else if (request.delayMs != null) {
    runAt = new Date(now + integerIn(request.delayMs, 'delayMs', 0, maxTtlMs));
  }
  if (runAt && runAt.getTime() > expiresAt)
    refuse(
      `runAt must not fall after the task's expiresAt (${new Date(expiresAt).toISOString()}); give a longer ttlMs or an earlier time.`,
    );
  const priority =
    request.priority == null ? 0 : integerIn(request.priority, 'priority', -100, 100);
  const concurrencyKey = request.concurrencyKey ?? null;
  if (concurrencyKey !== null && (typeof concurrencyKey !== 'string' || !KEY.test(concurrencyKey)))
    refuse('concurrencyKey must be 1 to 255 printable ASCII characters.');
  const concurrencyLimit =
    request.concurrencyLimit == null
      ? (kind.concurrency?.limit ?? null)
      : integerIn(request.concurrencyLimit, 'concurrencyLimit', 1, 1000);
  const rateLimitKey = request.rateLimitKey ?? null;
  if (rateLimitKey !== null && (typeof rateLimitKey !== 'string' || !KEY.test(rateLimitKey)))
    refuse('rateLimitKey must be 1 to 255 printable ASCII characters.');
  let rateLimit = kind.rateLimit ?? null;
  if (request.rateLimit != null) {
    const problem = rateLimitProblem(request.rateLimit, 'rateLimit');
    if (problem) refuse(`${problem}.`);
    const { limit, periodMs } = request.rateLimit as RateLimit;
    rateLimit = { limit, periodMs };
  }
  return {
    runAt,
    priority,
    concurrencyKey,
    concurrencyLimit,
    rateLimitKey,
    rateLimit,
    retry: resolveRetry(kind.retry, request.retry),
  };
}
