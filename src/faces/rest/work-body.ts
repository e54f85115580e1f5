import { ServiceError } from '../../errors.js';
import type { StartRequest } from '../../tasks/requests.js';

function optionalInt(value: unknown, name: string): number | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'number' || !Number.isInteger(value))
    throw new ServiceError('BAD_USER_INPUT', `${name} must be an integer.`);
  return value;
}

/** The body's §14 and §17 fields; ranges are the domain's to check. */
export function managedWorkOf(body: Record<string, unknown>): Partial<StartRequest> {
  const { runAt, retry, concurrencyKey, rateLimitKey, rateLimit } = body;
  if (runAt != null && typeof runAt !== 'string')
    throw new ServiceError('BAD_USER_INPUT', 'runAt must be an ISO 8601 date and time.');
  if (concurrencyKey != null && typeof concurrencyKey !== 'string')
    throw new ServiceError('BAD_USER_INPUT', 'concurrencyKey must be a string.');
  if (rateLimitKey != null && typeof rateLimitKey !== 'string')
    throw new ServiceError('BAD_USER_INPUT', 'rateLimitKey must be a string.');
  if (rateLimit != null && (typeof rateLimit !== 'object' || Array.isArray(rateLimit)))
    throw new ServiceError('BAD_USER_INPUT', 'rateLimit must be an object { limit, periodMs }.');
  if (retry != null && (typeof retry !== 'object' || Array.isArray(retry)))
    throw new ServiceError('BAD_USER_INPUT', 'retry must be an object.');
  const policy = (retry ?? {}) as Record<string, unknown>;
  const factor = policy.factor;
  if (factor != null && typeof factor !== 'number')
    throw new ServiceError('BAD_USER_INPUT', 'retry.factor must be a number.');
  return {
    runAt: runAt == null ? null : new Date(runAt),
    delayMs: optionalInt(body.delayMs, 'delayMs'),
    priority: optionalInt(body.priority, 'priority'),
    concurrencyKey: (concurrencyKey as string | null | undefined) ?? null,
    concurrencyLimit: optionalInt(body.concurrencyLimit, 'concurrencyLimit'),
    rateLimitKey: (rateLimitKey as string | null | undefined) ?? null,
    // Its fields' types and ranges are the domain's to check (one message for every face).
    rateLimit: (rateLimit as Record<string, unknown> | null | undefined) ?? null,
    retry:
      retry == null
        ? null
        : {
            maxAttempts: optionalInt(policy.maxAttempts, 'retry.maxAttempts'),
            initialDelayMs: optionalInt(policy.initialDelayMs, 'retry.initialDelayMs'),
            factor: (factor as number | null | undefined) ?? null,
            maxDelayMs: optionalInt(policy.maxDelayMs, 'retry.maxDelayMs'),
          },
  };
}
