import { ServiceError } from '../errors.js';

/** How a task's failed attempts are retried (DESIGN §14). */
export interface RetryPolicy {
  /** Attempts in all, the first included; 1..100. 1 = never retried. */
  maxAttempts: number;
  /** The first backoff, 0..86 400 000 ms. */
  initialDelayMs: number;
  /** Each next backoff is the previous one times this, 1..10. */
  factor: number;
  /** The cap on a backoff, initialDelayMs..86 400 000 ms. */
  maxDelayMs: number;
}

/** The policy of every kind that declares none: 3 attempts, 1 s, ×2, at most a minute. */
export const DEFAULT_RETRY: Readonly<RetryPolicy> = Object.freeze({
  maxAttempts: 3,
  initialDelayMs: 1_000,
  factor: 2,
  maxDelayMs: 60_000,
});

export const MAX_BACKOFF_MS = 86_400_000;

/**
 * The backoff after failed attempt `attempt` (1-based): uniform in [d/2, d] where
 * d = min(maxDelayMs, initialDelayMs × factor^(attempt−1)).
 */
export function backoffMs(policy: RetryPolicy, attempt: number, random = Math.random()): number {
  const d = Math.min(
    policy.maxDelayMs,
    policy.initialDelayMs * policy.factor ** Math.max(0, attempt - 1),
  );
  return Math.round(d / 2 + random * (d / 2));
}

function check(
  value: unknown,
  field: string,
  min: number,
  max: number,
  integer = true,
): asserts value is number {
  if (
    typeof value !== 'number' ||
    !Number.isFinite(value) ||
    (integer && !Number.isInteger(value)) ||
    value < min ||
    value > max
  )
    throw new ServiceError(
      'BAD_USER_INPUT',
      `${field} must be ${integer ? 'an integer' : 'a number'} from ${min} to ${max}.`,
    );
}

/**
 * `base` with the fields `override` gives, validated as a whole.
 * @param prefix how the fields are named in errors ("retry." for a request)
 * @throws ServiceError BAD_USER_INPUT naming the field at fault and its range
 */
export function resolveRetry(
  base: RetryPolicy,
  override: Partial<Record<keyof RetryPolicy, number | null | undefined>> | null | undefined,
  prefix = 'retry.',
): RetryPolicy {
  const policy = { ...base };
  for (const key of Object.keys(policy) as Array<keyof RetryPolicy>) {
    const value = override?.[key];
    if (value != null) policy[key] = value;
  }
  check(policy.maxAttempts, `${prefix}maxAttempts`, 1, 100);
  check(policy.initialDelayMs, `${prefix}initialDelayMs`, 0, MAX_BACKOFF_MS);
  check(policy.factor, `${prefix}factor`, 1, 10, false);
  check(policy.maxDelayMs, `${prefix}maxDelayMs`, policy.initialDelayMs, MAX_BACKOFF_MS);
  return policy;
}
