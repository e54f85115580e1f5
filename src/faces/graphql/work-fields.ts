import { builder } from './builder.js';
import { TaskErrorRef, TaskRef } from './task.js';

/** The Task's fields for managing the work (DESIGN §14). */
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
  lastError: t.field({
    type: TaskErrorRef,
    nullable: true,
    description: 'The error of the last failed attempt, kept while retrying.',
    resolve: (task) => task.lastError,
  }),
}));
