import { StreamResponse, type TaskPushNotificationConfig } from '@a2a-js/sdk';
import { TaskNotFoundError } from '@a2a-js/sdk/errors';
import { ownerActor } from '../../tasks/requests.js';
import type { TaskService } from '../../tasks/service.js';
import { isTerminal } from '../../tasks/status.js';
import type { Task } from '../../tasks/task.js';
import { configIdOf, type Webhook, type WebhookRequest } from '../../tasks/webhooks/rules.js';
import { statusEvent, taskEvent, taskIdOf } from './mapping.js';
import type { PushConfigs } from './push.js';

/**
 * A2A push notifications as a task's webhooks (DESIGN §10, §11): a config is a webhook of
 * the `a2a` shape, whose `token` and `authentication` travel back with every delivery. A
 * config keeps the id its client proposed (another config of the task with that id is
 * replaced, as the reference SDKs' stores do), and is read and deleted by it; without one,
 * its id is the webhook's.
 */

/** The webhook a config asks for. */
export function webhookRequestOf(config: TaskPushNotificationConfig): WebhookRequest {
  const auth = config.authentication;
  return {
    url: config.url,
    token: config.token ? config.token : null,
    authentication: auth?.scheme
      ? { scheme: auth.scheme, credentials: auth.credentials || null }
      : null,
    format: 'a2a',
    configId: config.id || null,
  };
}

function configOf(webhook: Webhook): TaskPushNotificationConfig {
  const auth = webhook.authentication;
  return {
    tenant: '',
    id: configIdOf(webhook),
    taskId: webhook.taskId,
    url: webhook.url,
    token: webhook.token ?? '',
    authentication: auth ? { scheme: auth.scheme, credentials: auth.credentials ?? '' } : undefined,
  };
}

/** A2A 1.0 has no error of its own for a missing config: the spec's is TaskNotFoundError. */
const noSuchConfig = () =>
  new TaskNotFoundError('The task has no push notification config with this id.');

/** The four config methods over the task service's webhooks; the card says `pushNotifications: true`. */
export function a2aPushConfigs(tasks: TaskService): PushConfigs {
  return {
    supported: true,
    async create(actor, config) {
      const webhook = await tasks.webhooks.attach(
        actor,
        taskIdOf(config.taskId),
        webhookRequestOf(config),
      );
      return configOf(webhook);
    },
    async get(actor, request) {
      const webhook = await tasks.webhooks.get(actor, taskIdOf(request.taskId), request.id);
      if (!webhook) throw noSuchConfig();
      return configOf(webhook);
    },
    async list(actor, request) {
      // At most five a task: one page holds them all.
      const webhooks = await tasks.webhooks.list(actor, taskIdOf(request.taskId));
      return { configs: webhooks.map(configOf), nextPageToken: '' };
    },
    async delete(actor, request) {
      // Idempotent: a config already gone is deleted. The task must still be the caller's.
      await tasks.webhooks.delete(actor, taskIdOf(request.taskId), request.id);
    },
  };
}

/**
 * The body sent to an A2A config: one StreamResponse in its JSON form, a `statusUpdate` for a
 * non-terminal version and the whole `task` (artifacts included) for the terminal one.
 */
export function a2aPushBody(task: Task): unknown {
  const owner = ownerActor(task.owner);
  return StreamResponse.toJSON(
    isTerminal(task.status) ? taskEvent(task, owner) : statusEvent(task, owner),
  );
}
