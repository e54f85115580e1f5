import type { Executor } from '../db/types.js';
import { notFound, ServiceError } from '../errors.js';
import { checkAwaiting } from './awaiting.js';
import type { TaskEvents } from './events/hub.js';
import { validateAgainst } from './kinds.js';
import type { Actor } from './requests.js';
import { answerTask } from './sql/answer.js';
import { findVisibleTask } from './sql/find.js';
import { type Task, toTask } from './task.js';
import { checkId, checkInputKey, checkPayload } from './validation.js';
import type { WebhookRequest } from './webhooks/rules.js';
import type { TaskWebhooks } from './webhooks/task-webhooks.js';

/** What answering a task's input request touches. */
export interface AnswerContext {
  db: Executor;
  events: TaskEvents;
  webhooks: TaskWebhooks;
}

/**
 * Answers the task's outstanding question `key` as its owner, attaching `webhook` in the same
 * statement when given; a refused answer keeps none. The task resumes (WORKING) once this was
 * its last outstanding question; otherwise it stays INPUT_REQUIRED, waiting for the others.
 * @throws ServiceError NOT_AWAITING_INPUT when the task no longer waits for `key`
 */
export async function answerInput(
  { db, events, webhooks }: AnswerContext,
  actor: Actor,
  id: string,
  key: string,
  value: unknown,
  webhook: WebhookRequest | null,
): Promise<Task> {
  const taskId = checkId(id);
  checkInputKey(key);
  checkPayload(value, 'value');
  const attach = webhook == null ? null : webhooks.prepare(webhook);
  const row = await findVisibleTask(db, taskId, actor.id);
  if (!row) throw notFound();
  const { schema } = checkAwaiting(row, key);
  if (schema) validateAgainst(schema, value, `value for ${key}`);
  const changed = attach
    ? await webhooks.answerWith(taskId, actor.id, key, value, attach)
    : await answerTask(db, taskId, actor.id, key, value);
  if (changed) {
    events.committed(changed.id, changed.version);
    return toTask(changed);
  }
  // The task moved on between the read and the write: say why, from what it is now.
  const now = await findVisibleTask(db, taskId, actor.id);
  if (!now) throw notFound();
  checkAwaiting(now, key);
  throw new ServiceError('NOT_AWAITING_INPUT', 'The task is no longer waiting for this input.');
}
