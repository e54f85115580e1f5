import { toActor } from '../../auth/principal.js';
import { type Schedule, scheduleCursor } from '../../schedules/schedule.js';
import { mayReadPayloads } from '../../tasks/visibility.js';
import { builder, type Context, scopeOf } from './builder.js';
import { actor, connectionOf, PageInfoRef, TaskRef } from './task.js';
import { managedWork, RetryPolicyInput } from './work-input.js';

/** DESIGN §17: the Schedule type, its queries and mutations, and `Task.scheduleKey`. */

const viewer = (context: Context) => (context.principal ? toActor(context.principal) : null);

const MissedPolicyEnum = builder.enumType('MissedPolicy', {
  description: 'What runs after a time no process could start a schedule’s occurrences in.',
  values: {
    SKIP: { value: 'skip', description: 'None of them.' },
    ONCE: { value: 'once', description: 'The latest one.' },
    ALL: { value: 'all', description: 'Every one, oldest first, at most 100.' },
  } as const,
});

const OverlapPolicyEnum = builder.enumType('OverlapPolicy', {
  values: {
    ALLOW: { value: 'allow', description: 'Every occurrence starts its task.' },
    SKIP: {
      value: 'skip',
      description: 'An occurrence is skipped while the schedule’s last task is still active.',
    },
  } as const,
});

const RetryPolicyRef = builder.objectRef<Record<string, number | null>>('RetryPolicy').implement({
  description: 'A retry policy as given; null fields take the kind’s.',
  fields: (t) => ({
    maxAttempts: t.int({ nullable: true, resolve: (p) => p.maxAttempts ?? null }),
    initialDelayMs: t.int({ nullable: true, resolve: (p) => p.initialDelayMs ?? null }),
    factor: t.float({ nullable: true, resolve: (p) => p.factor ?? null }),
    maxDelayMs: t.int({ nullable: true, resolve: (p) => p.maxDelayMs ?? null }),
  }),
});

export const ScheduleRef = builder.objectRef<Schedule>('Schedule').implement({
  description: 'Recurring work: each occurrence of the cron starts one task of the owner.',
  fields: (t) => ({
    key: t.exposeString('key'),
    cron: t.exposeString('cron'),
    timezone: t.exposeString('timezone', { description: 'IANA name; DST as the wall clock says.' }),
    kind: t.exposeString('kind'),
    input: t.field({
      type: 'JSON',
      nullable: true,
      description: 'What each task is started with. Owner only; null for anyone else.',
      authScopes: (schedule, _args, context) => mayReadPayloads(schedule, viewer(context)),
      unauthorizedResolver: () => null,
      resolve: (schedule) => schedule.input ?? null,
    }),
    missed: t.field({ type: MissedPolicyEnum, resolve: (s) => s.missed }),
    overlap: t.field({ type: OverlapPolicyEnum, resolve: (s) => s.overlap }),
    paused: t.exposeBoolean('paused'),
    priority: t.exposeInt('priority', { nullable: true }),
    labels: t.field({ type: 'JSON', nullable: true, resolve: (s) => s.labels }),
    retry: t.field({ type: RetryPolicyRef, nullable: true, resolve: (s) => s.retry }),
    ttlMs: t.exposeInt('ttlMs', { nullable: true }),
    concurrencyKey: t.exposeString('concurrencyKey', { nullable: true }),
    nextRunAt: t.expose('nextRunAt', {
      type: 'DateTime',
      nullable: true,
      description: 'The occurrence due next; null while paused.',
    }),
    lastRunAt: t.expose('lastRunAt', {
      type: 'DateTime',
      nullable: true,
      description: 'The occurrence (or the trigger) that started the last task.',
    }),
    lastTask: t.field({
      type: TaskRef,
      nullable: true,
      description: 'The last task the schedule started; null once it expired.',
      resolve: (schedule, _args, context) => context.schedules.lastTask(actor(context), schedule),
    }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    updatedAt: t.expose('updatedAt', { type: 'DateTime' }),
  }),
});

const ScheduleEdgeRef = builder
  .objectRef<{ cursor: string; node: Schedule }>('ScheduleEdge')
  .implement({
    fields: (t) => ({
      cursor: t.exposeString('cursor'),
      node: t.field({ type: ScheduleRef, resolve: (edge) => edge.node }),
    }),
  });

type Connection = {
  edges: Array<{ cursor: string; node: Schedule }>;
  pageInfo: {
    hasNextPage: boolean;
    hasPreviousPage: boolean;
    startCursor: string | null;
    endCursor: string | null;
  };
};

const ScheduleConnectionRef = builder.objectRef<Connection>('ScheduleConnection').implement({
  fields: (t) => ({
    edges: t.field({ type: [ScheduleEdgeRef], resolve: (c) => c.edges }),
    pageInfo: t.field({ type: PageInfoRef, resolve: (c) => c.pageInfo }),
  }),
});

const ScheduleInput = builder.inputType('ScheduleInput', {
  fields: (t) => ({
    key: t.string({
      required: true,
      description: '1..128 printable; one schedule per owner and key.',
    }),
    cron: t.string({
      required: true,
      description: '5 fields (minute precision), or @hourly, @daily, @weekly, @monthly.',
    }),
    timezone: t.string({ description: 'IANA name, default "UTC".' }),
    kind: t.string({ required: true }),
    input: t.field({ type: 'JSON', description: 'Checked against the kind’s schema when saved.' }),
    missed: t.field({ type: MissedPolicyEnum, description: 'Default SKIP.' }),
    overlap: t.field({ type: OverlapPolicyEnum, description: 'Default ALLOW.' }),
    paused: t.boolean({ description: 'Omitted: as it is (false for a new schedule).' }),
    priority: t.int({ description: '-100..100 for each task; default the kind’s.' }),
    labels: t.field({ type: 'JSON', description: 'Labels of each task.' }),
    retry: t.field({ type: RetryPolicyInput, description: 'Retry policy of each task.' }),
    ttlMs: t.int({ description: 'Retention of each task.' }),
    concurrencyKey: t.string({ description: 'Concurrency key of each task.' }),
  }),
});

const OWNER = 'Admins only: another principal’s schedule.';

builder.objectFields(TaskRef, (t) => ({
  scheduleKey: t.exposeString('scheduleKey', {
    nullable: true,
    description: 'The schedule whose occurrence this task is, if any.',
  }),
}));

builder.queryFields((t) => ({
  schedule: t.field({
    type: ScheduleRef,
    nullable: true,
    description: 'null: no such schedule of yours.',
    authScopes: scopeOf('schedule'),
    args: { key: t.arg.string({ required: true }), owner: t.arg.string({ description: OWNER }) },
    resolve: (_root, { key, owner }, context) =>
      context.schedules.get(actor(context), key, owner ?? null),
  }),
  schedules: t.field({
    type: ScheduleConnectionRef,
    description: 'Your schedules by key. Admins may name another principal with `owner`.',
    authScopes: scopeOf('schedules'),
    args: {
      first: t.arg.int(),
      after: t.arg.string(),
      owner: t.arg.string({ description: OWNER }),
    },
    resolve: async (_root, args, context) => {
      const page = await context.schedules.list(actor(context), {
        first: args.first ?? null,
        after: args.after ?? null,
        owner: args.owner ?? null,
      });
      return connectionOf(page.schedules, scheduleCursor, page.hasNextPage, args.after);
    },
  }),
}));

builder.mutationFields((t) => ({
  upsertSchedule: t.field({
    type: ScheduleRef,
    description:
      'Creates or replaces your schedule `input.key`; each occurrence starts one task (at most 1 000 schedules an owner).',
    authScopes: scopeOf('upsertSchedule'),
    args: {
      input: t.arg({ type: ScheduleInput, required: true }),
      owner: t.arg.string({ description: OWNER }),
    },
    resolve: (_root, { input, owner }, context) => {
      const { priority, concurrencyKey, retry } = managedWork(input);
      return context.schedules.upsert(
        actor(context),
        {
          key: input.key,
          cron: input.cron,
          timezone: input.timezone ?? null,
          kind: input.kind,
          input: input.input,
          missed: input.missed ?? null,
          overlap: input.overlap ?? null,
          paused: input.paused ?? null,
          priority: priority ?? null,
          labels: input.labels,
          retry: retry ?? null,
          ttlMs: input.ttlMs ?? null,
          concurrencyKey: concurrencyKey ?? null,
        },
        owner ?? null,
      );
    },
  }),
  deleteSchedule: t.field({
    type: 'Boolean',
    description: 'false: no such schedule. The tasks it started stay.',
    authScopes: scopeOf('deleteSchedule'),
    args: { key: t.arg.string({ required: true }), owner: t.arg.string({ description: OWNER }) },
    resolve: (_root, { key, owner }, context) =>
      context.schedules.remove(actor(context), key, owner ?? null),
  }),
  pauseSchedule: t.field({
    type: ScheduleRef,
    description: 'Pauses, or resumes from the next occurrence after now (paused: false).',
    authScopes: scopeOf('pauseSchedule'),
    args: {
      key: t.arg.string({ required: true }),
      paused: t.arg.boolean({ required: true }),
      owner: t.arg.string({ description: OWNER }),
    },
    resolve: (_root, { key, paused, owner }, context) =>
      context.schedules.pause(actor(context), key, paused, owner ?? null),
  }),
  triggerSchedule: t.field({
    type: TaskRef,
    description: 'Starts the schedule’s task now, out of turn; its next occurrence stays.',
    authScopes: scopeOf('triggerSchedule'),
    args: { key: t.arg.string({ required: true }), owner: t.arg.string({ description: OWNER }) },
    resolve: (_root, { key, owner }, context) =>
      context.schedules.trigger(actor(context), key, owner ?? null),
  }),
}));
