import {
  type Task as A2ATask,
  AgentCard,
  type CancelTaskRequest,
  type DeleteTaskPushNotificationConfigRequest,
  type GetTaskPushNotificationConfigRequest,
  type GetTaskRequest,
  type ListTaskPushNotificationConfigsRequest,
  type ListTaskPushNotificationConfigsResponse,
  type ListTasksRequest,
  type ListTasksResponse,
  type Message,
  type SendMessageRequest,
  type StreamResponse,
  type SubscribeToTaskRequest,
  type TaskPushNotificationConfig,
} from '@a2a-js/sdk';
import {
  ExtendedAgentCardNotConfiguredError,
  RequestMalformedError,
  TaskNotFoundError,
  UnsupportedOperationError,
} from '@a2a-js/sdk/errors';
import type { A2ARequestHandler, ServerCallContext } from '@a2a-js/sdk/server';
import type { Logger } from 'pino';
import type { TaskService } from '../../tasks/service.js';
import { isTerminal } from '../../tasks/status.js';
import { agentCard } from './card.js';
import { type Caller, callerOf } from './context.js';
import { type Operation, toA2AError } from './errors.js';
import { replyMessage, statusesOf, taskIdOf, toA2ATask } from './mapping.js';
import { Messages } from './messages.js';
import type { PushConfigs } from './push.js';
import { firstOf, follow, settle, settled } from './streams.js';

/** ListTasks' page size when the request names none (A2A's default). */
const DEFAULT_PAGE_SIZE = 50;

/**
 * The A2A methods over the task service (DESIGN §10). Nothing runs here: a message stores a
 * task that a worker runs, and waits and streams follow the task's events, so any process
 * serves any task. Every failure leaves as an A2A error (see toA2AError).
 */
export class TaskRequestHandler implements A2ARequestHandler {
  private readonly messages: Messages;

  constructor(
    private readonly tasks: TaskService,
    private readonly push: PushConfigs,
    private readonly log: Logger,
    /** `A2A_DEFAULT_SKILL`: the kind a message naming no skill starts. */
    private readonly defaultSkill?: string,
  ) {
    this.messages = new Messages(tasks, push, defaultSkill);
  }

  /** The card with a relative interface URL: the route serves it with the request's base. */
  async getAgentCard(): Promise<AgentCard> {
    return AgentCard.fromJSON(this.card(''));
  }

  /** The card as JSON for `baseUrl` (`<scheme>://<host>`). */
  card(baseUrl: string) {
    const { supported } = this.push;
    return agentCard({
      kinds: this.tasks.listKinds(),
      baseUrl,
      pushNotifications: supported,
      defaultSkill: this.defaultSkill,
    });
  }

  async getAuthenticatedExtendedAgentCard(): Promise<AgentCard> {
    throw new ExtendedAgentCardNotConfiguredError();
  }

  /** Runs `body` for the call's caller, turning whatever it throws into an A2A error. */
  private async call<T>(
    context: ServerCallContext,
    body: (caller: Caller) => Promise<T>,
    operation?: Operation,
  ): Promise<T> {
    const caller = callerOf(context);
    try {
      return await body(caller);
    } catch (err) {
      throw toA2AError(err, this.log, operation);
    }
  }

  sendMessage(params: SendMessageRequest, context: ServerCallContext): Promise<A2ATask | Message> {
    return this.call(
      context,
      async (caller) => {
        const delivery = await this.messages.deliver(params, caller);
        if (delivery.message) return delivery.message;
        let { task } = delivery;
        if (!params.configuration?.returnImmediately && !settled(task)) {
          const updates = await this.tasks.subscriptions.toTask(
            caller.actor,
            task.id,
            caller.principal.expiresAt,
          );
          task = (await settle(updates, caller.signal)) ?? task;
        }
        // A waiting caller gets the agent's message when the result asks for one.
        const reply = params.configuration?.returnImmediately
          ? undefined
          : replyMessage(task, caller.actor);
        return reply ?? toA2ATask(task, caller.actor);
      },
      'answer',
    );
  }

  async *sendMessageStream(
    params: SendMessageRequest,
    context: ServerCallContext,
  ): AsyncGenerator<StreamResponse, void, undefined> {
    const caller = callerOf(context);
    const delivery = await this.call(
      context,
      () => this.messages.deliver(params, caller),
      'answer',
    );
    if (delivery.message) {
      // The stream of a message is that one message (A2A 1.0).
      yield { payload: { $case: 'message', value: delivery.message } };
      return;
    }
    const { task } = delivery;
    const updates = await this.call(context, () =>
      this.tasks.subscriptions.toTask(caller.actor, task.id, caller.principal.expiresAt),
    );
    yield* this.stream(follow(updates, caller.actor, caller.signal));
  }

  async *resubscribe(
    params: SubscribeToTaskRequest,
    context: ServerCallContext,
  ): AsyncGenerator<StreamResponse, void, undefined> {
    const caller = callerOf(context);
    const { updates, first } = await this.call(context, async () => {
      const updates = await this.tasks.subscriptions.toTask(
        caller.actor,
        taskIdOf(params.id),
        caller.principal.expiresAt,
      );
      const first = await firstOf(updates, caller.signal);
      if (first && isTerminal(first.status)) {
        await updates.return?.();
        throw new UnsupportedOperationError(`The task is already ${first.status}.`);
      }
      return { updates, first };
    });
    if (!first) return;
    yield* this.stream(follow(updates, caller.actor, caller.signal, first));
  }

  /** Passes a stream on, masking what fails once it has begun. */
  private async *stream(
    events: AsyncGenerator<StreamResponse, void, undefined>,
  ): AsyncGenerator<StreamResponse, void, undefined> {
    try {
      yield* events;
    } catch (err) {
      throw toA2AError(err, this.log);
    }
  }

  getTask(params: GetTaskRequest, context: ServerCallContext): Promise<A2ATask> {
    return this.call(context, async ({ actor }) => {
      const task = await this.tasks.get(actor, taskIdOf(params.id));
      if (!task) throw new TaskNotFoundError();
      return toA2ATask(task, actor);
    });
  }

  listTasks(params: ListTasksRequest, context: ServerCallContext): Promise<ListTasksResponse> {
    return this.call(context, async ({ actor }) => {
      const pageSize = params.pageSize ?? DEFAULT_PAGE_SIZE;
      let updatedSince: Date | null = null;
      if (params.statusTimestampAfter) {
        updatedSince = new Date(params.statusTimestampAfter);
        if (Number.isNaN(updatedSince.getTime()))
          throw new RequestMalformedError('statusTimestampAfter must be an ISO 8601 timestamp.');
      }
      const statuses = statusesOf(params.status);
      if (statuses === undefined) throw new RequestMalformedError('status is not a task state.');
      const page = await this.tasks.listRecent(actor, {
        pageSize,
        pageToken: params.pageToken || null,
        statuses,
        id: params.contextId || null,
        updatedSince,
      });
      return {
        tasks: page.tasks.map((task) => {
          const a2a = toA2ATask(task, actor);
          return params.includeArtifacts ? a2a : { ...a2a, artifacts: [] };
        }),
        nextPageToken: page.nextPageToken ?? '',
        pageSize,
        totalSize: page.totalSize,
      };
    });
  }

  cancelTask(params: CancelTaskRequest, context: ServerCallContext): Promise<A2ATask> {
    return this.call(
      context,
      async ({ actor }) => toA2ATask(await this.tasks.cancel(actor, taskIdOf(params.id)), actor),
      'cancel',
    );
  }

  createTaskPushNotificationConfig(
    params: TaskPushNotificationConfig,
    context: ServerCallContext,
  ): Promise<TaskPushNotificationConfig> {
    return this.call(context, ({ actor }) => this.push.create(actor, params));
  }

  getTaskPushNotificationConfig(
    params: GetTaskPushNotificationConfigRequest,
    context: ServerCallContext,
  ): Promise<TaskPushNotificationConfig> {
    return this.call(context, ({ actor }) => this.push.get(actor, params));
  }

  listTaskPushNotificationConfigs(
    params: ListTaskPushNotificationConfigsRequest,
    context: ServerCallContext,
  ): Promise<ListTaskPushNotificationConfigsResponse> {
    return this.call(context, ({ actor }) => this.push.list(actor, params));
  }

  deleteTaskPushNotificationConfig(
    params: DeleteTaskPushNotificationConfigRequest,
    context: ServerCallContext,
  ): Promise<void> {
    return this.call(context, ({ actor }) => this.push.delete(actor, params));
  }
}
