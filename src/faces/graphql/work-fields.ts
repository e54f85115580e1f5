import type { RateLimit } from '../../tasks/flow-control.js';
import { builder } from './builder.js';
import { TaskErrorRef, TaskRef } from './task.js';

const RateLimitRef = builder.objectRef<RateLimit>('RateLimit').implement({
  description: 'At most `limit` tasks of a kind and key start running in any sliding `periodMs`.',
  fields: (t) => ({
    limit: t.exposeInt('limit'),
    periodMs: t.exposeInt('periodMs'),
  }),
});

const HoldReasonEnum = builder.enumType('HoldReason', {
  description: 'Why a task that could otherwise run waits to be claimed (DESIGN §14, §17).',
  values: {
    CONCURRENCY: {
      value: 'concurrency',
      description: 'Its concurrency key runs as many tasks as its limit.',
    },
    RATE_LIMIT: {
      value: 'rate_limit',
      description: 'Its rate limit key started as many tasks as its limit in the period.',
    },
    TIME: { value: 'time', description: 'It waits for its runAt (a delay, a backoff or a sleep).' },
  } as const,
});

/** The Task's fields for managing the work (DESIGN §14, §17). */
builder.objectFields(TaskRef, (t) => ({
  attempt: t.exposeInt('attempt', { description: 'Runs started so far (0 before the first).' }),
  maxAttempts: t.exposeInt('maxAttempts'),
  runAt: t.expose('runAt', {
    type: 'DateTime',
    nullable: true,
    description: 'Set while the task waits for its time or its next attempt.',
  }),
  priority: t.exposeInt('priority', { description: '-100..100; higher is claimed first.' }),
  concurrencyKey: t.exposeString('concurrencyKey', {
    nullable: true,
    description: 'As given at start; null: the owner is the key.',
  }),
  concurrencyLimit: t.exposeInt('concurrencyLimit', {
    nullable: true,
    description: 'The limit of running tasks of this kind and key this task is held to, if any.',
  }),
  rateLimitKey: t.exposeString('rateLimitKey', {
    nullable: true,
    description: 'As given at start; null: the owner is the key.',
  }),
  rateLimit: t.field({
    type: RateLimitRef,
    nullable: true,
    description: "The rate limit this task's first start is held to, if any.",
    resolve: (task) => task.rateLimit,
  }),
  heldBecause: t.field({
    type: HoldReasonEnum,
    nullable: true,
    description: 'Why it waits to be claimed, while it does; statusMessage says more.',
    resolve: (task) => task.heldBecause,
  }),
  lastError: t.field({
    type: TaskErrorRef,
    nullable: true,
    description: 'The error of the last failed attempt, kept while retrying.',
    resolve: (task) => task.lastError,
  }),
}));
