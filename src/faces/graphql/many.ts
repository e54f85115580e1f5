import type { CancelManyResult, StartRequest } from '../../tasks/service.js';
import type { Task } from '../../tasks/task.js';
import { builder, scopeOf } from './builder.js';
import { actor, StartTaskInput, TaskRef } from './task.js';
import { TaskFilterInput, taskFilterOf } from './task-filter.js';

/** DESIGN §15: acting on many tasks at once, and running one again. */

const CancelTasksResultRef = builder.objectRef<CancelManyResult>('CancelTasksResult').implement({
  fields: (t) => ({
    matched: t.exposeInt('matched', {
      description: 'Your tasks the filter matched, terminal ones included.',
    }),
    cancelled: t.exposeInt('cancelled', {
      description: 'Those this call cancelled, each CANCELLED before the answer.',
    }),
  }),
});

type StartArgument = Omit<StartRequest, 'webhook'> & {
  webhook?: { url: string; secret?: string | null | undefined } | null | undefined;
};

/** A batch entry as the domain takes it: the same fields as startTask's input. */
function startRequestOf({ webhook, ...rest }: StartArgument): StartRequest {
  return {
    ...rest,
    webhook: webhook ? { url: webhook.url, secret: webhook.secret ?? null } : null,
  };
}

builder.mutationFields((t) => ({
  startTasks: t.field({
    type: [TaskRef],
    description:
      'Starts up to 100 tasks in one transaction, in order. Every entry is checked first; a refused one (extensions.index) stores nothing.',
    authScopes: scopeOf('startTasks'),
    args: { inputs: t.arg({ type: [StartTaskInput], required: true }) },
    resolve: (_root, { inputs }, context): Promise<Task[]> =>
      context.tasks.startMany(
        actor(context),
        inputs.map((input) => startRequestOf(input as StartArgument)),
      ),
  }),
  cancelTasks: t.field({
    type: CancelTasksResultRef,
    description:
      'Cancels every active task of yours that meets the filter (admins: of filter.owner). An empty filter is refused: to cancel everything, name the statuses.',
    authScopes: scopeOf('cancelTasks'),
    args: { filter: t.arg({ type: TaskFilterInput, required: true }) },
    resolve: (_root, { filter }, context) =>
      context.tasks.cancelMany(actor(context), taskFilterOf(filter) ?? {}),
  }),
  retryTask: t.field({
    type: TaskRef,
    description:
      'Starts a failed or cancelled task of yours again as a new task (retryOf: the old one). With fromStep, the new task starts with the journal of the steps that ran before it: it re-runs from there.',
    authScopes: scopeOf('retryTask'),
    args: {
      id: t.arg.id({ required: true }),
      fromStep: t.arg.string({
        description: 'A step of the journal (Task.steps): it and every later step run again.',
      }),
    },
    resolve: (_root, { id, fromStep }, context) =>
      context.tasks.retry(actor(context), String(id), { fromStep: fromStep ?? null }),
  }),
}));
