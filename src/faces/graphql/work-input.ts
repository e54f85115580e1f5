import type { StartRequest } from '../../tasks/requests.js';
import { builder } from './builder.js';

/** The start input's fields for managing the work (DESIGN §14). */

export const RetryPolicyInput = builder.inputType('RetryPolicyInput', {
  description: "Overrides the kind's retry policy; omitted fields take the kind's.",
  fields: (t) => ({
    maxAttempts: t.int({ description: '1..100; 1 = never retried.' }),
    initialDelayMs: t.int({ description: 'The first backoff, 0..86 400 000.' }),
    factor: t.float({ description: '1..10: each next backoff is the previous one times this.' }),
    maxDelayMs: t.int({ description: 'The cap on a backoff, initialDelayMs..86 400 000.' }),
  }),
});

export const RateLimitInput = builder.inputType('RateLimitInput', {
  description:
    'At most `limit` tasks of the kind and rate limit key start running in any sliding `periodMs` (DESIGN §17).',
  fields: (t) => ({
    limit: t.int({ required: true, description: '1..1000' }),
    periodMs: t.int({ required: true, description: '1..86 400 000 (a day)' }),
  }),
});

/** The §14 and §17 fields of a StartTaskInput, as the service takes them. */
type Maybe<T> = T | null | undefined;

export function managedWork(input: {
  runAt?: Maybe<Date>;
  delayMs?: Maybe<number>;
  priority?: Maybe<number>;
  concurrencyKey?: Maybe<string>;
  concurrencyLimit?: Maybe<number>;
  rateLimitKey?: Maybe<string>;
  rateLimit?: Maybe<{ limit: number; periodMs: number }>;
  retry?: Maybe<{
    maxAttempts?: Maybe<number>;
    initialDelayMs?: Maybe<number>;
    factor?: Maybe<number>;
    maxDelayMs?: Maybe<number>;
  }>;
}): Partial<StartRequest> {
  return {
    runAt: input.runAt ?? null,
    delayMs: input.delayMs ?? null,
    priority: input.priority ?? null,
    concurrencyKey: input.concurrencyKey ?? null,
    concurrencyLimit: input.concurrencyLimit ?? null,
    rateLimitKey: input.rateLimitKey ?? null,
    rateLimit: input.rateLimit ?? null,
    retry: input.retry
      ? {
          maxAttempts: input.retry.maxAttempts ?? null,
          initialDelayMs: input.retry.initialDelayMs ?? null,
          factor: input.retry.factor ?? null,
          maxDelayMs: input.retry.maxDelayMs ?? null,
        }
      : null,
  };
}
