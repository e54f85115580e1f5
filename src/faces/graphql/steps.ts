import DataLoader from 'dataloader';
import { encodeCursor } from '../../tasks/cursor.js';
import type { TaskPage } from '../../tasks/service.js';
import type { TaskStep } from '../../tasks/steps/view.js';
import type { Task } from '../../tasks/task.js';
import { mayReadPayloads } from '../../tasks/visibility.js';
import { builder, type Context } from './builder.js';
import { actor, connectionOf, TaskConnectionRef, TaskErrorRef, TaskRef, viewer } from './task.js';
import { TaskFilterInput, taskFilterOf } from './task-filter.js';

/**
 * DESIGN §16 seen from outside: `Task.parentId`, `Task.steps` and `Task.children`. A page of
 * tasks each asking for its steps or children costs one statement for the page, not one per
 * task: the fields load through a batch per operation (DataLoader, without its cache, so a
 * subscription reads them anew at every event).
 */

/** A journal entry and whose task it is, for the owner-only fields. */
type ViewedStep = TaskStep & { taskOwner: string };

const mayReadStepPayloads = (step: ViewedStep, _args: unknown, context: Context) =>
  mayReadPayloads({ owner: step.taskOwner }, viewer(context));

const TaskStepStateEnum = builder.enumType('TaskStepState', {
  values: [
    'RUNNING',
    'COMPLETED',
    'FAILED',
    'SLEEPING',
    'WAITING_SIGNAL',
    'WAITING_CHILD',
  ] as const,
});

const TaskStepRef = builder.objectRef<ViewedStep>('TaskStep').implement({
  description:
    "One entry of a task's journal: a step (ctx.step), a wait (sleep, signal) or a child (startChild).",
  fields: (t) => ({
    name: t.exposeString('name'),
    state: t.field({ type: TaskStepStateEnum, resolve: (step) => step.state }),
    attempts: t.exposeInt('attempts', {
      description:
        "Runs of this step's fn (1 for a step that never failed; 0 for a wait not yet ended).",
    }),
    startedAt: t.expose('startedAt', { type: 'DateTime' }),
    endedAt: t.expose('endedAt', { type: 'DateTime', nullable: true }),
    wakeAt: t.expose('wakeAt', {
      type: 'DateTime',
      nullable: true,
      description: 'SLEEPING, or a signal wait with a timeout: when it wakes.',
    }),
    childId: t.exposeID('childId', {
      nullable: true,
      description: 'The child task of a startChild step (and of a WAITING_CHILD wait).',
    }),
    signalUrl: t.string({
      nullable: true,
      description:
        'The URL ctx.signalUrl minted for this wait, while it waits. Owner only; null for anyone else.',
      authScopes: mayReadStepPayloads,
      unauthorizedResolver: () => null,
      resolve: (step) => step.signalUrl,
    }),
    error: t.field({ type: TaskErrorRef, nullable: true, resolve: (step) => step.error }),
    result: t.field({
      type: 'JSON',
      nullable: true,
      description: 'What the step returned. Owner only; null for anyone else.',
      authScopes: mayReadStepPayloads,
      unauthorizedResolver: () => null,
      resolve: (step) => step.result ?? null,
    }),
  }),
});

interface ChildrenArgs {
  first?: number | null | undefined;
  after?: string | null | undefined;
  filter?: Parameters<typeof taskFilterOf>[0];
}

/** The batches of one operation: steps by task, children by task for each set of arguments. */
interface Loaders {
  steps: DataLoader<Task, TaskStep[] | null>;
  children: Map<string, DataLoader<Task, TaskPage>>;
}

const loadersOf = new WeakMap<Context, Loaders>();

function loaders(context: Context): Loaders {
  let found = loadersOf.get(context);
  if (!found) {
    found = {
      steps: new DataLoader((tasks) => context.tasks.journals.stepsOf(actor(context), tasks), {
        cache: false,
      }),
      children: new Map(),
    };
    loadersOf.set(context, found);
  }
  return found;
}

/**
 * The children of `task` through the batch of its arguments: parents of one owner asking the
 * same page share one statement. The owner is the parent's (an admin sees another's children).
 */
function childrenOf(task: Task, args: ChildrenArgs, context: Context): Promise<TaskPage> {
  const request = {
    first: args.first ?? null,
    after: args.after ?? null,
    filter: { ...taskFilterOf(args.filter), owner: task.owner },
  };
  const key = JSON.stringify(request);
  const batches = loaders(context).children;
  let batch = batches.get(key);
  if (!batch) {
    batch = new DataLoader(
      (parents: readonly Task[]) =>
        context.tasks.tree.childrenOfMany(
          actor(context),
          parents.map((parent) => parent.id),
          request,
        ),
      { cache: false },
    );
    batches.set(key, batch);
  }
  return batch.load(task);
}

builder.objectFields(TaskRef, (t) => ({
  parentId: t.exposeID('parentId', {
    nullable: true,
    description: 'The task whose handler started this one (ctx.startChild), if any.',
  }),
  steps: t.field({
    type: [TaskStepRef],
    description:
      "The task's journal, in the order its entries first ran: steps, waits and children. Read anew with every change of the task.",
    resolve: async (task, _args, context) => {
      const steps = (await loaders(context).steps.load(task)) ?? [];
      return steps.map((step) => ({ ...step, taskOwner: task.owner }));
    },
  }),
  children: t.field({
    type: TaskConnectionRef,
    description: 'The tasks its handler started (ctx.startChild), newest first.',
    args: {
      first: t.arg.int(),
      after: t.arg.string(),
      filter: t.arg({ type: TaskFilterInput }),
    },
    resolve: async (task, args, context) => {
      const page = await childrenOf(task, args, context);
      return connectionOf(page.tasks, encodeCursor, page.hasNextPage, args.after);
    },
  }),
}));
