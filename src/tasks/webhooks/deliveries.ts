import { sql } from 'kysely';
import { prepared } from '../../db/pg-pool.js';
import type { DeliveryRow, Executor } from '../../db/types.js';

/**
 * Every statement on `task_deliveries` but the one that writes a delivery with the change it
 * reports (store.ts's `attachedWith`, and the trigger of migration 0002): this room owns the
 * table, because its rows are a task's (they live and go with it, the purge and the webhook
 * rules lock them against the task), and the deliverer (src/webhook-delivery/) calls these to
 * claim, record and give back its attempts, and knows no SQL.
 *
 * The delivery worker's queries. A claim is a lease whose fencing token is (worker_id,
 * attempts): a worker that lost its lease writes nothing. Claims, and the delivered outcomes
 * recorded with them, are the function of migration 0003. The hot statements (claims and
 * delivered outcomes) lock delivery rows only; the purge locks an expired task's deliveries
 * `for update skip locked` and leaves a task with one held for its next pass, so it never waits
 * on them (`purgeDeliveries` below). Locking the task row as well would cost a tuple lock, its WAL
 * record and often a multixact (the runner holds the same row) on every statement, where the
 * purge's check costs one pass in a minute. The rarer writers of webhook rows (a 410, a
 * deleted webhook) still hold the task `for key share`, which the purge skips.
 *
 * Claims and outcomes commit without waiting for their WAL flush (`synchronous_commit = off`
 * for that transaction only), as task claims do: one lost in a Postgres crash leaves the
 * delivery pending, sent again once its lease lapses, which at-least-once delivery allows
 * (receivers deduplicate by `webhook-id`). The delivery rows themselves are written with the
 * status change they report, and that commit is flushed.
 */

const NOT_ATTEMPTED_GONE = 'not attempted: the webhook was disabled by 410 Gone';

/** A claimed delivery with what its attempt needs. */
export interface ClaimedDelivery {
  id: string;
  task_id: string;
  webhook_id: string;
  version: number;
  snapshot: Record<string, unknown>;
  attempts: number;
  url: string;
  secret: string;
  format: 'standard' | 'a2a';
  token: string | null;
  auth_scheme: string | null;
  auth_credentials: string | null;
  /** The task's stored traceparent, read only while tracing is on (webhook-delivery/trace.ts). */
  trace_parent?: string | null;
}

/**
 * Claims up to `limit` due deliveries: pending, not leased, of an unexpired task, and the
 * oldest pending version of their webhook (a webhook's next delivery waits for the previous).
 * A due delivery of a disabled webhook is failed instead of claimed (migration 0003 says why).
 */
export async function claimDeliveries(
  db: Executor,
  workerId: string,
  limit: number,
  leaseMs: number,
): Promise<ClaimedDelivery[]> {
  return (await finishDelivered(db, workerId, [], { limit, leaseMs })).claimed;
}

export type DeliveryOutcome =
  | { kind: 'delivered'; statusCode: number }
  | { kind: 'retry'; statusCode: number | null; error: string; delayMs: number }
  | { kind: 'failed'; statusCode: number | null; error: string }
  /** 410 Gone: this delivery fails, the webhook is disabled, and its pending ones fail too. */
  | { kind: 'gone'; statusCode: number; error: string };

/** Records an attempt's outcome under the lease. @returns whether the lease was still held */
export async function finishDelivery(
  db: Executor,
  workerId: string,
  claimed: Pick<ClaimedDelivery, 'id' | 'task_id' | 'webhook_id' | 'attempts'>,
  outcome: DeliveryOutcome,
): Promise<boolean> {
  const code = outcome.statusCode;
  const error = outcome.kind === 'delivered' ? null : outcome.error;
  const set =
    outcome.kind === 'delivered'
      ? sql`state = 'delivered', delivered_at = now()`
      : outcome.kind === 'retry'
        ? sql`next_attempt_at = now() + ${Math.round(outcome.delayMs)}::int * interval '1 millisecond'`
        : sql`state = 'failed'`;
  // A 410 disables the webhook and fails its pending deliveries in the same statement: were
  // it a second one, a claim in between could take the webhook's next delivery and send it.
  const gone =
    outcome.kind === 'gone'
      ? sql`, w as (
          update task_webhooks w set disabled_at = now() from d where w.id = d.webhook_id
          returning w.id
        ), p as (
          update task_deliveries p
          set state = 'failed', last_error = ${NOT_ATTEMPTED_GONE}
          from w
          where p.webhook_id = w.id and p.state = 'pending' and p.id <> ${claimed.id}::uuid
          returning 1
        )`
      : sql``;
  const result = await sql<{ id: string }>`${prepared}
    with t as (select id from tasks where id = ${claimed.task_id}::uuid for key share),
    d as (
      update task_deliveries d
      set ${set}, last_status_code = ${code}::int, last_error = ${error},
          worker_id = null, lease_expires_at = null
      from t, (select set_config('synchronous_commit', 'off', true)) async_commit
      where d.id = ${claimed.id}::uuid and d.task_id = t.id and d.worker_id = ${workerId}
        and d.attempts = ${claimed.attempts}::int and d.state = 'pending'
      returning d.id, d.webhook_id
    )${gone}
    select id from d${outcome.kind === 'gone' ? sql`, (select count(*) from p) failed` : sql``}`.execute(
    db,
  );
  const held = result.rows.length > 0;
  return held;
}

/**
 * Records many `delivered` outcomes in one statement (attempts that end together, as under
 * load, share one commit), and in the same statement claims up to `claim.limit` due
 * deliveries for the slots they free, the next version of these webhooks included: one round
 * trip and one commit where a finish and a claim would take two. Both are the function of
 * migration 0003, whose plan walks the due index in order whatever the statistics say.
 * @returns the ids whose lease was still held, and the deliveries claimed
 */
export async function finishDelivered(
  db: Executor,
  workerId: string,
  done: ReadonlyArray<{ claim: Pick<ClaimedDelivery, 'id' | 'attempts'>; statusCode: number }>,
  claim: { limit: number; leaseMs: number } = { limit: 0, leaseMs: 0 },
): Promise<{ held: Set<string>; claimed: ClaimedDelivery[] }> {
  if (done.length === 0 && claim.limit <= 0) return { held: new Set(), claimed: [] };
  const result = await sql<{ held: string[]; claims: ClaimedDelivery[] | null }>`${prepared}
    select held::text[] as held, claims from taskhandle_claim_deliveries(
      ${workerId}, ${Math.max(0, claim.limit)}::int, ${claim.leaseMs}::int,
      ${done.map((d) => d.claim.id)}::uuid[], ${done.map((d) => d.claim.attempts)}::int[],
      ${done.map((d) => d.statusCode)}::int[])`.execute(db);
  const row = result.rows[0]!;
  return { held: new Set(row.held), claimed: row.claims ?? [] };
}

/**
 * Gives claimed deliveries back without counting the attempt (a graceful stop), so another
 * process retries them at once.
 */
export async function releaseDeliveries(
  db: Executor,
  workerId: string,
  claims: ReadonlyArray<Pick<ClaimedDelivery, 'id' | 'attempts'>>,
): Promise<number> {
  if (claims.length === 0) return 0;
  const ids = claims.map((c) => c.id);
  const result = await sql<{ id: string }>`
    update task_deliveries d
    set worker_id = null, lease_expires_at = null, attempts = greatest(d.attempts - 1, 0)
    from unnest(${ids}::uuid[], ${claims.map((c) => c.attempts)}::int[]) as h(id, attempts)
    where d.id = h.id and d.attempts = h.attempts
      and d.worker_id = ${workerId} and d.state = 'pending'
    returning d.id`.execute(db);
  return result.rows.length;
}

/** The task's deliveries, newest first (`first` of them); the caller checked it may see them. */
export async function listDeliveries(
  db: Executor,
  taskId: string,
  first: number,
): Promise<DeliveryRow[]> {
  return db
    .selectFrom('task_deliveries')
    .selectAll()
    .where('task_id', '=', taskId)
    .orderBy('version', 'desc')
    .orderBy('created_at', 'desc')
    .orderBy('id')
    .limit(first)
    .execute();
}

/**
 * The purge's part in `task_deliveries` (src/tasks/purge.ts): CTEs for its statement, which
 * has a CTE `batch` of the expired tasks it locked and, after these, deletes the tasks not
 * `held` as `gone`. `free`: the batch's deliveries no worker is writing at this moment, locked
 * skipping the rest; `held`: the tasks with a delivery a worker is writing, left for the next
 * pass, so the purge never waits on a deliverer.
 */
export const deliveriesOfBatch = sql`free as (
    select id, task_id from task_deliveries where task_id in (select id from batch)
    for update skip locked
  ), held as (
    select task_id from task_deliveries
    where task_id in (select id from batch) and id not in (select id from free)
  )`;

/** The purge's delete of the deliveries of the tasks it deleted (`gone`), after {@link deliveriesOfBatch}. */
export const deliveriesGone = sql`deliveries as (
    delete from task_deliveries
    where id in (select id from free) and task_id in (select id from gone)
  )`;
