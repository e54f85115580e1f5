import { type RawBuilder, sql } from 'kysely';
import type { Executor, WebhookRow } from '../../db/types.js';
import { answersTo } from './rules.js';

/**
 * The queries behind a task's webhooks (DESIGN §11), executor first. `owner` always narrows
 * to the task's owner: webhooks are payload, nobody else's business, admins included.
 */

/** Channel woken whenever deliveries may have become due (the trigger of migration 0002). */
export const DELIVERY_CHANNEL = 'taskhandle_delivery';
/** Most webhooks one task may have, over every face. */
export const MAX_WEBHOOKS_PER_TASK = 5;

/** The columns of a task a delivery reports: the row minus its input and internals. */
const SNAPSHOT = sql`to_jsonb(t) - array['input', 'answers', 'idempotency_key', 'worker_id', 'lease_expires_at']`;

export interface NewWebhook {
  id: string;
  url: string;
  secret: string;
  format: 'standard' | 'a2a';
  token: string | null;
  authScheme: string | null;
  authCredentials: string | null;
  /** The id the client proposed for it (migration 0011); null when none. */
  configId: string | null;
}

function values(taskId: string, w: NewWebhook, afterVersion: number) {
  return {
    id: w.id,
    task_id: taskId,
    url: w.url,
    secret: w.secret,
    format: w.format,
    token: w.token,
    auth_scheme: w.authScheme,
    auth_credentials: w.authCredentials,
    config_id: w.configId,
    after_version: afterVersion,
  };
}

/**
 * What the statement that changed a task (its row as `t`) adds to attach `webhook` with a
 * delivery of that change: CTEs to append after `t`, and a column that wakes the deliverers.
 * Task, webhook and delivery commit in that one statement, and a statement that changes
 * nothing (an idempotent replay, an answer refused) attaches nothing.
 */
function attachedWith(
  webhook: NewWebhook,
  afterVersion: RawBuilder<unknown>,
  onlyTo: RawBuilder<unknown> = sql`true`,
): { ctes: RawBuilder<unknown>; column: RawBuilder<unknown> } {
  const w = webhook;
  return {
    ctes: sql`, w as (
      insert into task_webhooks (id, task_id, url, secret, format, token, auth_scheme,
                                 auth_credentials, config_id, after_version)
      select ${w.id}::uuid, t.id, ${w.url}, ${w.secret}, ${w.format}, ${w.token},
             ${w.authScheme}, ${w.authCredentials}, ${w.configId}, ${afterVersion}
      from t
      where ${onlyTo}
      returning id
    ), d as (
      insert into task_deliveries (id, task_id, webhook_id, version, status, snapshot)
      select gen_random_uuid(), t.id, w.id, t.version, t.status, ${SNAPSHOT}
      from t, w
      returning 1
    )`,
    column: sql`, (select count(*) from d) as deliveries, pg_notify(${DELIVERY_CHANNEL}, '') as delivery_due`,
  };
}

/**
 * A webhook attached at start reports version 1 too (DESIGN §11). It goes to the task the
 * start created, `taskId`, only: a debounced start that joins another task's burst (§17)
 * attaches nothing, as an idempotent replay attaches nothing.
 */
export const attachedAtStart = (webhook: NewWebhook, taskId: string) =>
  attachedWith(webhook, sql`0`, sql`t.id = ${taskId}::uuid`);

/**
 * A webhook attached with an answer reports the answer's change, delivered here (the task's
 * trigger does not see a webhook its own statement inserts), and every later one.
 */
export const attachedWithAnswer = (webhook: NewWebhook) => attachedWith(webhook, sql`t.version`);

/** Thrown inside the transaction to roll it back when its write changed nothing. */
class NothingWritten extends Error {}

/**
 * Runs `write` with `owner`'s live task locked, if it has room for `webhook`. The lock is held
 * for the count, so concurrent attachments cannot pass the limit together, and a status change
 * either committed before or after. A webhook with a client's config id replaces the task's
 * config of that id (which frees its place): the old one and its deliveries are deleted in the
 * same transaction. A write that answers `undefined` changed nothing, and rolls all of it back:
 * a refused answer replaces nothing.
 */
export async function withRoomForWebhook<T>(
  db: Executor,
  taskId: string,
  owner: string,
  webhook: NewWebhook,
  write: (trx: Executor, version: number) => Promise<T>,
): Promise<T | 'not_found' | 'full'> {
  try {
    return await db.transaction().execute(async (trx) => {
      const task = await sql<{ version: number }>`
        select version from tasks
        where id = ${taskId}::uuid and owner = ${owner} and expires_at > now()
        for no key update`.execute(trx);
      const version = task.rows[0]?.version;
      if (version === undefined) return 'not_found' as const;
      if (webhook.configId !== null) await dropConfig(trx, taskId, owner, webhook.configId);
      const count = await sql<{ n: number }>`
        select count(*)::int as n from task_webhooks where task_id = ${taskId}::uuid`.execute(trx);
      if ((count.rows[0]?.n ?? 0) >= MAX_WEBHOOKS_PER_TASK) return 'full' as const;
      const written = await write(trx, version);
      if (written === undefined) throw new NothingWritten();
      return written;
    });
  } catch (err) {
    // Only a write that answered undefined throws this: T admits undefined.
    if (err instanceof NothingWritten) return undefined as T;
    throw err;
  }
}

/** Deletes the task's config answering to `configId`, if any, with its deliveries; the task is locked. */
async function dropConfig(
  trx: Executor,
  taskId: string,
  owner: string,
  configId: string,
): Promise<void> {
  const rows = await trx
    .selectFrom('task_webhooks')
    .select(['id', 'config_id'])
    .where('task_id', '=', taskId)
    .execute();
  const same = rows.find((w) => answersTo({ id: w.id, configId: w.config_id }, configId));
  if (same) await deleteWebhook(trx, taskId, owner, same.id);
}

/** Attaches a webhook to a live task of `owner`'s; it reports the changes after the current version. */
export async function attachLater(
  db: Executor,
  taskId: string,
  owner: string,
  webhook: NewWebhook,
): Promise<WebhookRow | 'not_found' | 'full'> {
  return withRoomForWebhook(db, taskId, owner, webhook, (trx, version) =>
    trx
      .insertInto('task_webhooks')
      .values(values(taskId, webhook, version))
      .returningAll()
      .executeTakeFirstOrThrow(),
  );
}

/** The task's webhooks, oldest first; empty for a task that is not `owner`'s or is gone. */
export async function listWebhooks(
  db: Executor,
  taskId: string,
  owner: string,
): Promise<WebhookRow[]> {
  return db
    .selectFrom('task_webhooks as w')
    .innerJoin('tasks as t', 't.id', 'w.task_id')
    .selectAll('w')
    .where('w.task_id', '=', taskId)
    .where('t.owner', '=', owner)
    .where('t.expires_at', '>', sql<Date>`now()`)
    .orderBy('w.created_at')
    .orderBy('w.id')
    .execute();
}

/**
 * Deletes one webhook (its deliveries go with it), locking its task for key share first like
 * every writer of these tables, so a purge skips the task instead of waiting.
 * @returns whether it existed
 */
export async function deleteWebhook(
  db: Executor,
  taskId: string,
  owner: string,
  webhookId: string,
): Promise<boolean> {
  const result = await sql<{ id: string }>`
    with t as (
      select id from tasks
      where id = ${taskId}::uuid and owner = ${owner} and expires_at > now()
      for key share
    ), w as (
      delete from task_webhooks w using t
      where w.id = ${webhookId}::uuid and w.task_id = t.id
      returning w.id, w.task_id
    ), d as (
      delete from task_deliveries d using w where d.task_id = w.task_id and d.webhook_id = w.id
    )
    select id from w`.execute(db);
  return result.rows.length > 0;
}
