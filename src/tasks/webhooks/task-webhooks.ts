import { type Kysely, sql } from 'kysely';
import type { Database, TaskRow } from '../../db/types.js';
import { notFound } from '../../errors.js';
import type { Actor } from '../requests.js';
import { answerTask } from '../sql/answer.js';
import type { Task } from '../task.js';
import { checkId } from '../validation.js';
import { mayReadPayloads } from '../visibility.js';
import { listDeliveries } from './deliveries.js';
import {
  answersTo,
  bad,
  type Delivery,
  MAX_DELIVERIES_PAGE,
  prepareWebhook,
  toDelivery,
  toWebhook,
  type Webhook,
  type WebhookRequest,
} from './rules.js';
import {
  attachedWithAnswer,
  attachLater,
  deleteWebhook,
  listWebhooks,
  MAX_WEBHOOKS_PER_TASK,
  type NewWebhook,
  withRoomForWebhook,
} from './store.js';

const full = () =>
  bad(`A task has at most ${MAX_WEBHOOKS_PER_TASK} webhooks; this one has them all.`);

/**
 * A task's webhooks after start, for the owner only (another principal, admin or not, gets
 * NOT_FOUND as for an unknown task). Reads for a face that already holds a visible task go
 * through `of`/`deliveriesOf`, which apply the payload rule themselves.
 */
export class TaskWebhooks {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly allowPrivate: boolean,
  ) {}

  prepare(request: WebhookRequest): NewWebhook {
    return prepareWebhook(request, this.allowPrivate);
  }

  /**
   * A request with a `configId` the task has already replaces that webhook (see
   * `withRoomForWebhook`), and so is never a sixth.
   * @throws NOT_FOUND (not the actor's task), BAD_USER_INPUT (bad request, or a sixth webhook)
   */
  async attach(actor: Actor, taskId: string, request: WebhookRequest): Promise<Webhook> {
    const id = checkId(taskId);
    const webhook = this.prepare(request);
    const row = await attachLater(this.db, id, actor.id, webhook);
    if (row === 'not_found') throw notFound();
    if (row === 'full') throw full();
    return toWebhook(row);
  }

  /**
   * Answers the task's input request `key` and attaches `webhook` in one statement, so the
   * webhook reports the answer's change and every later one, and a refused answer keeps
   * nothing. `undefined`: the task was not waiting for `key` (the caller says why).
   * @throws BAD_USER_INPUT when the task has its webhooks already
   */
  async answerWith(
    taskId: string,
    owner: string,
    key: string,
    value: unknown,
    webhook: NewWebhook,
  ): Promise<TaskRow | undefined> {
    const row = await withRoomForWebhook(this.db, taskId, owner, webhook, (trx) =>
      answerTask(trx, taskId, owner, key, value, attachedWithAnswer(webhook)),
    );
    if (row === 'full') throw full();
    return row === 'not_found' ? undefined : row;
  }

  /** @throws NOT_FOUND when the task is not the actor's */
  async list(actor: Actor, taskId: string): Promise<Webhook[]> {
    const id = checkId(taskId);
    const rows = await listWebhooks(this.db, id, actor.id);
    if (rows.length === 0 && !(await this.owns(actor, id))) throw notFound();
    return rows.map(toWebhook);
  }

  /**
   * The webhook `configId` names: the id its client proposed, else its own (`answersTo`).
   * null: no such webhook on the actor's task. @throws NOT_FOUND when the task is not theirs
   */
  async get(actor: Actor, taskId: string, configId: string): Promise<Webhook | null> {
    const found = (await this.list(actor, taskId)).find((w) => answersTo(w, configId));
    return found ?? null;
  }

  /**
   * Deletes the webhook `configId` names, as `get` finds it.
   * @returns whether it existed. @throws NOT_FOUND when the task is not the actor's
   */
  async delete(actor: Actor, taskId: string, configId: string): Promise<boolean> {
    const id = checkId(taskId);
    const rows = await listWebhooks(this.db, id, actor.id);
    const found = rows.map(toWebhook).find((w) => answersTo(w, configId));
    if (found && (await deleteWebhook(this.db, id, actor.id, found.id))) return true;
    if (rows.length === 0 && !(await this.owns(actor, id))) throw notFound();
    return false;
  }

  /** The webhooks of a task the viewer can see; null when it may not read payloads. */
  async of(task: Task, viewer: Actor | null): Promise<Webhook[] | null> {
    if (!viewer || !mayReadPayloads(task, viewer)) return null;
    return (await listWebhooks(this.db, task.id, viewer.id)).map(toWebhook);
  }

  /** Newest first; null when the viewer may not read payloads. */
  async deliveriesOf(
    task: Task,
    viewer: Actor | null,
    first: number | null | undefined,
  ): Promise<Delivery[] | null> {
    const n = first ?? 20;
    if (!Number.isInteger(n) || n < 1 || n > MAX_DELIVERIES_PAGE)
      throw bad(`first must be between 1 and ${MAX_DELIVERIES_PAGE}.`);
    if (!mayReadPayloads(task, viewer)) return null;
    return (await listDeliveries(this.db, task.id, n)).map(toDelivery);
  }

  private async owns(actor: Actor, taskId: string): Promise<boolean> {
    const row = await this.db
      .selectFrom('tasks')
      .select('id')
      .where('id', '=', taskId)
      .where('owner', '=', actor.id)
      .where('expires_at', '>', sql<Date>`now()`)
      .executeTakeFirst();
    return row !== undefined;
  }
}
