import { ServiceError } from '../../errors.js';
import type { DebounceRequest, StartRequest } from '../../tasks/requests.js';

function optionalInt(value: unknown, name: string): number | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'number' || !Number.isInteger(value))
    throw new ServiceError('BAD_USER_INPUT', `${name} must be an integer.`);
  return value;
}

/** The body's §14 fields; ranges are the domain's to check. */
export function managedWorkOf(body: Record<string, unknown>): Partial<StartRequest> {
  const { runAt, retry, concurrencyKey } = body;
  if (runAt != null && typeof runAt !== 'string')
    throw new ServiceError('BAD_USER_INPUT', 'runAt must be an ISO 8601 date and time.');
  if (concurrencyKey != null && typeof concurrencyKey !== 'string')
    throw new ServiceError('BAD_USER_INPUT', 'concurrencyKey must be a string.');
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

/**
 * The body's `debounce` (DESIGN §17), as given: the domain checks its shape and ranges, with the
 * same messages for every face.
 */
export function debounceOf(body: Record<string, unknown>): DebounceRequest | null {
  return (body.debounce ?? null) as DebounceRequest | null;
}
