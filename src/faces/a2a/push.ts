import type {
  DeleteTaskPushNotificationConfigRequest,
  GetTaskPushNotificationConfigRequest,
  ListTaskPushNotificationConfigsRequest,
  ListTaskPushNotificationConfigsResponse,
  TaskPushNotificationConfig,
} from '@a2a-js/sdk';
import { PushNotificationNotSupportedError } from '@a2a-js/sdk/errors';
import type { Actor } from '../../tasks/service.js';

/**
 * A2A push notifications: a task's webhooks (DESIGN §11) managed over A2A. The face asks
 * `supported` for the card's `capabilities.pushNotifications` and whether `SendMessage` may
 * carry a config; each method is one JSON-RPC method of the same name.
 */
export interface PushConfigs {
  readonly supported: boolean;
  create(actor: Actor, config: TaskPushNotificationConfig): Promise<TaskPushNotificationConfig>;
  get(
    actor: Actor,
    request: GetTaskPushNotificationConfigRequest,
  ): Promise<TaskPushNotificationConfig>;
  list(
    actor: Actor,
    request: ListTaskPushNotificationConfigsRequest,
  ): Promise<ListTaskPushNotificationConfigsResponse>;
  delete(actor: Actor, request: DeleteTaskPushNotificationConfigRequest): Promise<void>;
}

const refuse = async (): Promise<never> => {
  throw new PushNotificationNotSupportedError();
};

/** Until webhooks exist: every push method answers PushNotificationNotSupportedError (-32003). */
export const noPushConfigs: PushConfigs = {
  supported: false,
  create: refuse,
  get: refuse,
  list: refuse,
  delete: refuse,
};
