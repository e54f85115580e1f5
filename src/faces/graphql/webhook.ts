import { toActor } from '../../auth/principal.js';
import type { Task } from '../../tasks/task.js';
import { mayReadPayloads } from '../../tasks/visibility.js';
import type { Delivery, Webhook } from '../../tasks/webhooks/rules.js';
import { builder, type Context } from './builder.js';
import { TaskRef } from './task.js';

/** A task's webhooks and deliveries (DESIGN §11): owner-only fields of Task, like `input`. */

const viewer = (context: Context) => (context.principal ? toActor(context.principal) : null);
const mayReadTaskPayloads = (task: Task, _args: unknown, context: Context) =>
  mayReadPayloads(task, viewer(context));

const TaskWebhookRef = builder.objectRef<Webhook>('TaskWebhook').implement({
  description: 'A URL the task’s status changes are pushed to, signed with `secret`.',
  fields: (t) => ({
    id: t.exposeID('id'),
    url: t.exposeString('url'),
    secret: t.exposeString('secret', {
      description: 'The Standard Webhooks secret (whsec_…) that signs every delivery.',
    }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
  }),
});

const TaskDeliveryStateEnum = builder.enumType('TaskDeliveryState', {
  values: ['PENDING', 'DELIVERED', 'FAILED'] as const,
});

const TaskDeliveryRef = builder.objectRef<Delivery>('TaskDelivery').implement({
  description: 'One status change pushed to one webhook: its attempts so far.',
  fields: (t) => ({
    id: t.exposeID('id', { description: 'The webhook-id header, the same on every attempt.' }),
    webhookId: t.exposeID('webhookId'),
    version: t.exposeInt('version'),
    status: t.exposeString('status', { description: 'The reported status, in lower case.' }),
    state: t.field({ type: TaskDeliveryStateEnum, resolve: (d) => d.state }),
    attempts: t.exposeInt('attempts'),
    lastStatusCode: t.exposeInt('lastStatusCode', {
      nullable: true,
      description: 'null when no HTTP answer came.',
    }),
    lastError: t.exposeString('lastError', { nullable: true }),
    nextAttemptAt: t.expose('nextAttemptAt', { type: 'DateTime', nullable: true }),
    deliveredAt: t.expose('deliveredAt', { type: 'DateTime', nullable: true }),
  }),
});

builder.objectFields(TaskRef, (t) => ({
  webhooks: t.field({
    type: [TaskWebhookRef],
    nullable: true,
    description: 'Where status changes are pushed. Owner only; null for anyone else.',
    authScopes: mayReadTaskPayloads,
    unauthorizedResolver: () => null,
    resolve: (task, _args, context) => context.tasks.webhooks.of(task, viewer(context)),
  }),
  deliveries: t.field({
    type: [TaskDeliveryRef],
    nullable: true,
    description: 'Pushes of status changes, newest first (first: 1..100, default 20). Owner only.',
    args: { first: t.arg.int() },
    authScopes: mayReadTaskPayloads,
    unauthorizedResolver: () => null,
    resolve: (task, { first }, context) =>
      context.tasks.webhooks.deliveriesOf(task, viewer(context), first),
  }),
}));
