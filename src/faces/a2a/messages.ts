import type { Message, Part, SendMessageRequest } from '@a2a-js/sdk';
import { Role } from '@a2a-js/sdk';
import {
  ContentTypeNotSupportedError,
  PushNotificationNotSupportedError,
  RequestMalformedError,
  TaskNotFoundError,
  UnsupportedOperationError,
} from '@a2a-js/sdk/errors';
import type { TaskService } from '../../tasks/service.js';
import { isTerminal } from '../../tasks/status.js';
import type { Task } from '../../tasks/task.js';
import type { WebhookRequest } from '../../tasks/webhooks/rules.js';
import type { Caller } from './context.js';
import { firstData, LABELS_KEY, taskIdOf } from './mapping.js';
import { messageInput, skillsMessage } from './no-skill.js';
import type { PushConfigs } from './push.js';
import { webhookRequestOf } from './push-configs.js';

/**
 * The media types a part may carry (docs/a2a.md): none, or `application/json` (the card's input
 * mode), or for a text part `text/plain`, as generic clients mark text. A text part is a JSON
 * string, already Unicode, so a `charset` parameter describes nothing to apply and is ignored.
 * Other text types are refused: a kind gets the text without its type, so it could not tell
 * Markdown or HTML from plain text.
 */
function acceptedMediaType(part: Part): boolean {
  const type = (part.mediaType ?? '').split(';')[0]!.trim().toLowerCase();
  if (type === '' || type === 'application/json') return true;
  return type === 'text/plain' && part.content?.$case === 'text';
}

/** A part of any other media type is refused before anything is stored (A2A 1.0). */
function checkMediaTypes(parts: readonly Part[]): void {
  for (const part of parts) {
    if (!acceptedMediaType(part))
      throw new ContentTypeNotSupportedError(
        'A message part has a media type the agent does not accept: a part may be ' +
          'application/json, a text part text/plain, or name no media type.',
      );
  }
}

/** What a message comes to: a task (started or answered), or the agent's own message. */
export type Delivery = { task: Task; message?: undefined } | { message: Message; task?: undefined };

/**
 * What a SendMessage does (DESIGN §10): a message without `taskId` starts a task of the skill
 * it names, or of the default skill when it names none (without one, the answer lists the
 * skills); one with `taskId` answers that task's question. Either may bring a push config.
 */
export class Messages {
  constructor(
    private readonly tasks: TaskService,
    private readonly push: PushConfigs,
    /** `A2A_DEFAULT_SKILL`, checked against the registered kinds at start-up. */
    private readonly defaultSkill: string | undefined,
  ) {}

  /** Starts a task, or answers the question of the task the message names. */
  async deliver(params: SendMessageRequest, caller: Caller): Promise<Delivery> {
    const { message } = params;
    if (!message) throw new RequestMalformedError('params.message is required.');
    if (message.role !== Role.ROLE_USER)
      throw new RequestMalformedError('message.role must be ROLE_USER.');
    checkMediaTypes(message.parts);
    if (params.configuration?.taskPushNotificationConfig && !this.push.supported)
      throw new PushNotificationNotSupportedError();
    const push = params.configuration?.taskPushNotificationConfig;
    const webhook = push ? webhookRequestOf(push) : null;
    if (message.taskId) return { task: await this.answer(message, caller, webhook) };
    const named: unknown = message.metadata?.skill;
    // Absent, null and "" alike name no skill; anything else must be a skill's name.
    const skill = named === null || named === '' ? undefined : named;
    if (skill !== undefined && typeof skill !== 'string')
      throw new RequestMalformedError(
        'message.metadata.skill must name one of the skills on the agent card.',
      );
    let start: { kind: string; input: unknown };
    if (skill !== undefined) start = { kind: skill, input: firstData(message.parts) ?? {} };
    else if (this.defaultSkill !== undefined)
      start = { kind: this.defaultSkill, input: messageInput(message) };
    else return { message: skillsMessage(this.tasks.listKinds()) };
    return { task: await this.start(message, caller, webhook, start) };
  }

  private async start(
    message: Message,
    { actor }: Caller,
    webhook: WebhookRequest | null,
    { kind, input }: { kind: string; input: unknown },
  ): Promise<Task> {
    if (message.contextId) {
      throw new RequestMalformedError(
        'message.contextId is chosen by the server (it is the task id): leave it out to start a task.',
      );
    }
    const ttlMs = message.metadata?.ttlMs;
    if (ttlMs !== undefined && (typeof ttlMs !== 'number' || !Number.isInteger(ttlMs)))
      throw new RequestMalformedError('message.metadata.ttlMs must be an integer.');
    if (!message.messageId) throw new RequestMalformedError('message.messageId is required.');
    const { task } = await this.tasks.start(actor, {
      kind,
      input,
      ttlMs: ttlMs ?? null,
      // The principal's one key space, shared with REST's Idempotency-Key.
      idempotencyKey: message.messageId,
      webhook,
      labels: message.metadata?.[LABELS_KEY],
    });
    return task;
  }

  /**
   * Answers the task's question. A push config given with the answer is attached with it, so
   * it reports the answer's change and every later one; a refused answer keeps nothing.
   */
  private async answer(
    message: Message,
    { actor }: Caller,
    webhook: WebhookRequest | null,
  ): Promise<Task> {
    const id = taskIdOf(message.taskId);
    if (message.contextId && message.contextId.toLowerCase() !== id.toLowerCase())
      throw new RequestMalformedError('message.contextId must be absent or equal to taskId.');
    const task = await this.tasks.get(actor, id);
    if (!task) throw new TaskNotFoundError();
    if (task.status !== 'input_required' || !task.inputRequest) {
      throw new UnsupportedOperationError(
        isTerminal(task.status)
          ? `The task is already ${task.status}.`
          : 'The task is not waiting for input.',
      );
    }
    // The default skill reads every message alike; any other kind, the first data part.
    const value =
      task.kind === this.defaultSkill ? messageInput(message) : firstData(message.parts);
    if (value === undefined)
      throw new RequestMalformedError('An answer is a message with a data part: the value.');
    return this.tasks.provideInput(actor, id, task.inputRequest.key, value, webhook);
  }
}
