import { toActor } from '../../auth/principal.js';
import { ServiceError } from '../../errors.js';
import type { TaskKind } from '../../tasks/kinds.js';
import type { InputRequest, TaskFailure } from '../../tasks/status.js';
import type { Task } from '../../tasks/task.js';
import { mayReadPayloads } from '../../tasks/visibility.js';
import { builder, type Context } from './builder.js';
import { DebounceInput } from './debounce-input.js';
import { NodeRef } from './node.js';
import { TaskWebhookInput } from './webhook-input.js';
import { RateLimitInput, RetryPolicyInput } from './work-input.js';

/** The caller as the domain sees it. Field scopes have already required a principal. */
export function actor(context: Context) {
  if (!context.principal)
    throw context.authError ?? new ServiceError('UNAUTHENTICATED', 'Authentication required.');
  return toActor(context.principal);
}

/** The caller as the domain sees it, or null without a principal (a nested field's rule). */
export const viewer = (context: Context) => (context.principal ? toActor(context.principal) : null);
const mayReadTaskPayloads = (task: Task, _args: unknown, context: Context) =>
  mayReadPayloads(task, viewer(context));

export const TaskStatusEnum = builder.enumType('TaskStatus', {
  values: {
    WORKING: { value: 'working' },
    INPUT_REQUIRED: { value: 'input_required' },
    COMPLETED: { value: 'completed' },
    CANCELLED: { value: 'cancelled' },
    FAILED: { value: 'failed' },
  } as const,
});

export const TaskErrorRef = builder.objectRef<TaskFailure>('TaskError').implement({
  description:
    'Why a task failed: HANDLER_ERROR, TIMEOUT, WORKER_LOST, or a code the handler chose.',
  fields: (t) => ({
    code: t.exposeString('code'),
    message: t.exposeString('message'),
  }),
});

const TaskInputRequestRef = builder.objectRef<InputRequest>('TaskInputRequest').implement({
  description: 'What a task waiting for input asks; answer with provideTaskInput(id, key, value).',
  fields: (t) => ({
    key: t.exposeString('key'),
    message: t.exposeString('message'),
    schema: t.field({ type: 'JSON', nullable: true, resolve: (r) => r.schema ?? null }),
  }),
});

export const TaskRef = builder.objectRef<Task>('Task').implement({
  description: 'A handle on work that outlasts a request.',
  interfaces: [NodeRef],
  fields: (t) => ({
    id: t.exposeID('id', { description: 'The taskId: a random UUID.' }),
    kind: t.exposeString('kind'),
    status: t.field({ type: TaskStatusEnum, resolve: (task) => task.status }),
    statusMessage: t.exposeString('statusMessage', { nullable: true }),
    progress: t.exposeFloat('progress', {
      nullable: true,
      description: '0..1 once the handler reports it.',
    }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    lastUpdatedAt: t.expose('lastUpdatedAt', { type: 'DateTime' }),
    ttlMs: t.exposeInt('ttlMs', { description: 'Effective retention, from createdAt.' }),
    expiresAt: t.expose('expiresAt', { type: 'DateTime' }),
    pollIntervalMs: t.exposeInt('pollIntervalMs', {
      description: 'How long a poller should wait before asking again.',
    }),
    version: t.exposeInt('version', { description: '1 at creation, +1 on every change.' }),
    input: t.field({
      type: 'JSON',
      nullable: true,
      description: 'What startTask received. Owner only; null for anyone else.',
      authScopes: mayReadTaskPayloads,
      unauthorizedResolver: () => null,
      resolve: (task) => task.input ?? null,
    }),
    result: t.field({
      type: 'JSON',
      nullable: true,
      description: 'Set when COMPLETED. Owner only; null for anyone else.',
      authScopes: mayReadTaskPayloads,
      unauthorizedResolver: () => null,
      resolve: (task) => task.result ?? null,
    }),
    error: t.field({
      type: TaskErrorRef,
      nullable: true,
      description: 'Set when FAILED.',
      resolve: (task) => task.error,
    }),
    inputRequest: t.field({
      type: TaskInputRequestRef,
      nullable: true,
      description: 'Set when INPUT_REQUIRED. Owner only; null for anyone else.',
      authScopes: mayReadTaskPayloads,
      unauthorizedResolver: () => null,
      resolve: (task) => task.inputRequest,
    }),
    inputRequests: t.field({
      type: [TaskInputRequestRef],
      nullable: true,
      description:
        'Every question still unanswered while INPUT_REQUIRED, in the order asked (inputRequest is the first); empty otherwise. Owner only; null for anyone else.',
      authScopes: mayReadTaskPayloads,
      unauthorizedResolver: () => null,
      resolve: (task) => task.inputRequests,
    }),
    owner: t.exposeString('owner', {
      nullable: true,
      description: 'The principal that started the task. Admins only; null for anyone else.',
      // The owner's name is for admins only (tasks/visibility.ts); a scope, so the schema shows it.
      authScopes: { admin: true },
      unauthorizedResolver: () => null,
    }),
    // DESIGN §15: whoever may see the task (its owner, an admin) reads its labels.
    labels: t.field({
      type: 'JSON',
      description:
        'Set at start, never changed (but by a debounced start that joins the task): an object of string values.',
      resolve: (task) => task.labels,
    }),
    retryOf: t.exposeID('retryOf', {
      nullable: true,
      description: 'The failed or cancelled task this one runs again (retryTask).',
    }),
  }),
});

export const TaskKindRef = builder.objectRef<TaskKind>('TaskKind').implement({
  fields: (t) => ({
    name: t.exposeString('name'),
    description: t.exposeString('description'),
    inputSchema: t.field({ type: 'JSON', nullable: true, resolve: (kind) => kind.inputSchema }),
  }),
});

/** A Relay connection's edges and page info, from one page of nodes and their cursors. */
export function connectionOf<Node>(
  nodes: readonly Node[],
  cursorOf: (node: Node) => string,
  hasNextPage: boolean,
  after: string | null | undefined,
) {
  const edges = nodes.map((node) => ({ cursor: cursorOf(node), node }));
  return {
    edges,
    pageInfo: {
      hasNextPage,
      hasPreviousPage: after != null,
      startCursor: edges[0]?.cursor ?? null,
      endCursor: edges.at(-1)?.cursor ?? null,
    },
  };
}

export const PageInfoRef = builder
  .objectRef<{
    hasNextPage: boolean;
    hasPreviousPage: boolean;
    startCursor: string | null;
    endCursor: string | null;
  }>('PageInfo')
  .implement({
    fields: (t) => ({
      hasNextPage: t.exposeBoolean('hasNextPage'),
      hasPreviousPage: t.exposeBoolean('hasPreviousPage'),
      startCursor: t.exposeString('startCursor', { nullable: true }),
      endCursor: t.exposeString('endCursor', { nullable: true }),
    }),
  });

const TaskEdgeRef = builder.objectRef<{ cursor: string; node: Task }>('TaskEdge').implement({
  fields: (t) => ({
    cursor: t.exposeString('cursor'),
    node: t.field({ type: TaskRef, resolve: (edge) => edge.node }),
  }),
});

export const TaskConnectionRef = builder
  .objectRef<{
    edges: Array<{ cursor: string; node: Task }>;
    pageInfo: {
      hasNextPage: boolean;
      hasPreviousPage: boolean;
      startCursor: string | null;
      endCursor: string | null;
    };
  }>('TaskConnection')
  .implement({
    fields: (t) => ({
      edges: t.field({ type: [TaskEdgeRef], resolve: (c) => c.edges }),
      pageInfo: t.field({ type: PageInfoRef, resolve: (c) => c.pageInfo }),
    }),
  });

export const StartTaskInput = builder.inputType('StartTaskInput', {
  fields: (t) => ({
    kind: t.string({ required: true }),
    input: t.field({ type: 'JSON' }),
    ttlMs: t.int({ description: 'Clamped to [TASK_MIN_TTL_MS, TASK_MAX_TTL_MS].' }),
    idempotencyKey: t.string({
      description: '1..255 printable characters; the same key and request return the same task.',
    }),
    webhook: t.field({
      type: TaskWebhookInput,
      description: 'Pushes every status change, from the first, to this URL.',
    }),
    runAt: t.field({
      type: 'DateTime',
      description: 'Not before this instant; at most expiresAt.',
    }),
    delayMs: t.int({ description: 'Or: not before now + delayMs (not both).' }),
    priority: t.int({ description: '-100..100, default 0; higher is claimed first.' }),
    concurrencyKey: t.string({
      description: '1..255 printable; groups tasks of a kind for their limit (default: the owner).',
    }),
    concurrencyLimit: t.int({
      description:
        "1..1000: at most this many of the kind and key run at once (default: the kind's).",
    }),
    rateLimitKey: t.string({
      description:
        '1..255 printable; groups tasks of a kind for their rate limit (default: the owner).',
    }),
    rateLimit: t.field({
      type: RateLimitInput,
      description: "This task's rate limit for its key (default: the kind's).",
    }),
    retry: t.field({ type: RetryPolicyInput, description: "Overrides the kind's retry policy." }),
    labels: t.field({
      type: 'JSON',
      description:
        'At most 16 string values; keys [a-z0-9][a-z0-9._/-]{0,62}, values 1..255 printable characters.',
    }),
    debounce: t.field({
      type: DebounceInput,
      description:
        'Joins the task of this kind and key that has not started yet (not with idempotencyKey, runAt or delayMs).',
    }),
  }),
});

builder.queryType({});
builder.mutationType({});
builder.subscriptionType({});
