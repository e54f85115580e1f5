import { ServiceError } from '../../errors.js';
import { encodeCursor } from '../../tasks/cursor.js';
import type { TaskStatus } from '../../tasks/status.js';
import type { Task } from '../../tasks/task.js';
import { builder, scopeOf } from './builder.js';
import { NodeRef } from './node.js';
import {
  actor,
  connectionOf,
  StartTaskInput,
  TaskConnectionRef,
  TaskKindRef,
  TaskRef,
  TaskStatusEnum,
} from './task.js';
import { TaskFilterInput, taskFilterOf } from './task-filter.js';
import { managedWork } from './work-input.js';

/** The task's queries, mutations and subscriptions (DESIGN §3); its types are in task.ts. */

/** The most ids one `nodes` takes, as `first` pages at most 100 tasks. */
const MAX_NODES = 100;

builder.queryFields((t) => ({
  task: t.field({
    type: TaskRef,
    nullable: true,
    description: 'null: unknown, expired, or not yours.',
    authScopes: scopeOf('task'),
    args: { id: t.arg.id({ required: true }) },
    resolve: (_root, { id }, context) => context.tasks.get(actor(context), String(id)),
  }),
  // Relay's refetch: the task(id) field under the Node interface, with its scope, its audit,
  // and its null for a task that is not the caller's.
  node: t.field({
    type: NodeRef,
    nullable: true,
    description: 'The task with this id, as task(id) answers it.',
    authScopes: scopeOf('task'),
    args: { id: t.arg.id({ required: true }) },
    resolve: (_root, { id }, context) => context.tasks.get(actor(context), String(id)),
  }),
  nodes: t.field({
    type: [NodeRef],
    nullable: { list: false, items: true },
    description: `Each id as node(id) answers it, in order; at most ${MAX_NODES} ids.`,
    authScopes: scopeOf('task'),
    args: { ids: t.arg.idList({ required: true }) },
    resolve: (_root, { ids }, context) => {
      if (ids.length > MAX_NODES)
        throw new ServiceError('BAD_USER_INPUT', `nodes takes at most ${MAX_NODES} ids.`);
      const caller = actor(context);
      // One promise an id: a malformed one is that item's error, the others still answer.
      return ids.map((id) => context.tasks.get(caller, String(id)));
    },
  }),
  tasks: t.field({
    type: TaskConnectionRef,
    description: 'Your tasks, newest first. Admins may name another principal with `owner`.',
    authScopes: scopeOf('tasks'),
    args: {
      first: t.arg.int(),
      after: t.arg.string(),
      status: t.arg({ type: [TaskStatusEnum] }),
      owner: t.arg.string({
        description: 'Admins only: list this principal’s tasks instead of your own.',
      }),
      filter: t.arg({ type: TaskFilterInput }),
    },
    resolve: async (_root, args, context) => {
      const page = await context.tasks.list(actor(context), {
        first: args.first ?? null,
        after: args.after ?? null,
        statuses: (args.status as TaskStatus[] | null | undefined) ?? null,
        owner: args.owner ?? null,
        filter: taskFilterOf(args.filter),
      });
      return connectionOf(page.tasks, encodeCursor, page.hasNextPage, args.after);
    },
  }),
  taskKinds: t.field({
    type: [TaskKindRef],
    authScopes: { authenticated: true },
    resolve: (_root, _args, context) => context.tasks.listKinds(),
  }),
}));

builder.mutationFields((t) => ({
  startTask: t.field({
    type: TaskRef,
    description:
      'Accepts the work and returns its handle at once; the task is stored before this answers.',
    authScopes: scopeOf('startTask'),
    args: { input: t.arg({ type: StartTaskInput, required: true }) },
    resolve: async (_root, { input }, context) => {
      const { task } = await context.tasks.start(actor(context), {
        kind: input.kind,
        input: input.input,
        ttlMs: input.ttlMs ?? null,
        idempotencyKey: input.idempotencyKey ?? null,
        webhook: input.webhook
          ? { url: input.webhook.url, secret: input.webhook.secret ?? null }
          : null,
        ...managedWork(input),
        labels: input.labels,
        debounce: input.debounce ?? null,
      });
      return task;
    },
  }),
  cancelTask: t.field({
    type: TaskRef,
    authScopes: scopeOf('cancelTask'),
    args: { id: t.arg.id({ required: true }) },
    resolve: (_root, { id }, context) => context.tasks.cancel(actor(context), String(id)),
  }),
  provideTaskInput: t.field({
    type: TaskRef,
    authScopes: scopeOf('provideTaskInput'),
    args: {
      id: t.arg.id({ required: true }),
      key: t.arg.string({ required: true }),
      value: t.arg({ type: 'JSON', required: true }),
    },
    resolve: (_root, { id, key, value }, context) =>
      context.tasks.provideInput(actor(context), String(id), key, value),
  }),
}));

builder.subscriptionFields((t) => ({
  taskUpdated: t.field({
    type: TaskRef,
    description:
      'The current state, then every later version in order; completes after the final state (or when the task expires, or the token does).',
    authScopes: scopeOf('taskUpdated'),
    args: { id: t.arg.id({ required: true }) },
    subscribe: (_root, { id }, context) =>
      context.tasks.subscriptions.toTask(actor(context), String(id), context.streamUntil),
    resolve: (task: Task) => task,
  }),
  tasksUpdated: t.field({
    type: TaskRef,
    description:
      'Every later change of your tasks, in version order per task (no initial state: query `tasks` after subscribing). Admins may follow another principal with `owner` (payloads stay null). Completes when the token expires.',
    authScopes: scopeOf('tasksUpdated'),
    args: {
      status: t.arg({ type: [TaskStatusEnum], description: 'Only changes into these statuses.' }),
      owner: t.arg.string({ description: 'Admins only: follow this principal’s tasks.' }),
      filter: t.arg({
        type: TaskFilterInput,
        description: 'Only changes that leave a task meeting this filter.',
      }),
    },
    subscribe: (_root, args, context) =>
      context.tasks.subscriptions.toOwner(
        actor(context),
        {
          statuses: (args.status as TaskStatus[] | null | undefined) ?? null,
          owner: args.owner ?? null,
          filter: taskFilterOf(args.filter),
        },
        context.streamUntil,
      ),
    resolve: (task: Task) => task,
  }),
}));
