import { type RawBuilder, sql } from 'kysely';
import { prepared } from '../db/pg-pool.js';
import type { Executor } from '../db/types.js';
import type { AttemptResult } from './attempt.js';

/**
 * The delivery worker's queries. A claim is a lease whose fencing token is (worker_id,
 * attempts): a worker that lost its lease writes nothing. The hot statements (claims and
 * delivered outcomes) lock delivery rows only; the purge locks an expired task's deliveries
 * `for update skip locked` and leaves a task with one held for its next pass, so it never waits
 * on them (src/tasks/purge.ts). Locking the task row as well would cost a tuple lock, its WAL
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
}

/**
 * Claims up to `limit` due deliveries: pending, not leased, of an unexpired task, and the
 * oldest pending version of their webhook (a webhook's next delivery waits for the previous).
 *
 * A due delivery of a disabled webhook is failed here instead of claimed. The 410 that
 * disabled it fails the webhook's pending deliveries, but a status change committing at that
 * moment can add one the 410's statement cannot see (its trigger read the webhook before the
 * 410 committed); without this it would stay pending for good.
 */
export async function claimDeliveries(
  db: Executor,
  workerId: string,
  limit: number,
  leaseMs: number,
): Promise<ClaimedDelivery[]> {
  const result = await sql<ClaimedDelivery>`${prepared}
    with ${claiming(workerId, limit, leaseMs, sql``)}
    select * from claimed`.execute(db);
  return result.rows;
}

/**
 * The CTEs `c`, `gone` and `claimed` of a claim. `settled` narrows the ordering check: the
 * deliveries it names (ones the same statement records as delivered) no longer hold back
 * their webhook's next version.
 */
function claiming(workerId: string, limit: number, leaseMs: number, settled: RawBuilder<unknown>) {
  return sql`c as (
      select d.id, d.webhook_id from task_deliveries d
      join tasks t on t.id = d.task_id
      where d.state = 'pending' and d.next_attempt_at <= now()
        and (d.lease_expires_at is null or d.lease_expires_at < now())
        and t.expires_at > now()
        -- the oldest pending version of its webhook: a scalar subquery, so that it is one
        -- probe of task_deliveries_pending per candidate whatever the statistics say
        and d.version = (
          select min(p.version) from task_deliveries p
          where p.webhook_id = d.webhook_id and p.state = 'pending' ${settled}
        )
      order by d.next_attempt_at
      limit ${limit}::int
      for update of d skip locked
    ), gone as (
      update task_deliveries d
      set state = 'failed', last_error = ${NOT_ATTEMPTED_GONE}
      from c, task_webhooks w
      where d.id = c.id and w.id = c.webhook_id and w.disabled_at is not null
      returning d.id
    ), claimed as (
      update task_deliveries d
      set worker_id = ${workerId}, attempts = d.attempts + 1,
          lease_expires_at = now() + ${leaseMs}::int * interval '1 millisecond'
      from c, task_webhooks w, (select set_config('synchronous_commit', 'off', true)) async_commit
      where d.id = c.id and w.id = c.webhook_id and w.disabled_at is null
      returning d.id, d.task_id, d.webhook_id, d.version, d.snapshot, d.attempts,
                w.url, w.secret, w.format, w.token, w.auth_scheme, w.auth_credentials
    )`;
}

export type Outcome =
  | { kind: 'delivered'; statusCode: number }
  | { kind: 'retry'; statusCode: number | null; error: string; delayMs: number }
  | { kind: 'failed'; statusCode: number | null; error: string }
  /** 410 Gone: this delivery fails, the webhook is disabled, and its pending ones fail too. */
  | { kind: 'gone'; statusCode: number; error: string };

/**
 * What an attempt's answer means for its delivery (DESIGN §11): a 2xx delivers it, a 410
 * disables its webhook, and anything else is retried after the schedule's next delay (±10 %
 * jitter, so webhooks that failed together do not retry together) until it runs out.
 * @param attempts the attempts so far, this one included
 */
export function outcomeOf(
  result: AttemptResult,
  attempts: number,
  retryScheduleMs: readonly number[],
): Outcome {
  const { statusCode } = result;
  if (statusCode !== null && statusCode >= 200 && statusCode < 300)
    return { kind: 'delivered', statusCode };
  if (statusCode === 410)
    return { kind: 'gone', statusCode, error: '410 Gone: the webhook is disabled' };
  const error =
    'error' in result
      ? result.error
      : result.statusCode >= 300 && result.statusCode < 400
        ? `redirect ${result.statusCode} (not followed)`
        : `answered ${result.statusCode}`;
  const delay = retryScheduleMs[attempts - 1];
  if (delay === undefined) return { kind: 'failed', statusCode, error };
  return { kind: 'retry', statusCode, error, delayMs: delay * (0.9 + Math.random() * 0.2) };
}

/** Records an attempt's outcome under the lease. @returns whether the lease was still held */
export async function finishDelivery(
  db: Executor,
  workerId: string,
  claimed: Pick<ClaimedDelivery, 'id' | 'task_id' | 'webhook_id' | 'attempts'>,
  outcome: Outcome,
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
 * trip and one commit where a finish and a claim would take two.
 * @returns the ids whose lease was still held, and the deliveries claimed
 */
export async function finishDelivered(
  db: Executor,
  workerId: string,
  done: ReadonlyArray<{ claim: Pick<ClaimedDelivery, 'id' | 'attempts'>; statusCode: number }>,
  claim: { limit: number; leaseMs: number } = { limit: 0, leaseMs: 0 },
): Promise<{ held: Set<string>; claimed: ClaimedDelivery[] }> {
  if (done.length === 0) return { held: new Set(), claimed: [] };
  const ids = done.map((d) => d.claim.id);
  const next =
    claim.limit > 0
      ? sql`, ${claiming(workerId, claim.limit, claim.leaseMs, sql`and p.id not in (select id from f)`)}`
      : sql``;
  const result = await sql<{ held: string[]; claimed: ClaimedDelivery[] | null }>`${prepared}
    with h as (
      select * from unnest(${ids}::uuid[], ${done.map((d) => d.claim.attempts)}::int[],
                           ${done.map((d) => d.statusCode)}::int[]) as h(id, attempts, code)
    ), f as (
      update task_deliveries d
      set state = 'delivered', delivered_at = now(), last_status_code = h.code, last_error = null,
          worker_id = null, lease_expires_at = null
      from h, (select set_config('synchronous_commit', 'off', true)) async_commit
      where d.id = h.id and d.worker_id = ${workerId}
        and d.attempts = h.attempts and d.state = 'pending'
      returning d.id
    )${next}
    select array(select id from f)::text[] as held,
           ${claim.limit > 0 ? sql`(select json_agg(claimed) from claimed)` : sql`null::json`} as claimed`.execute(
    db,
  );
  const row = result.rows[0]!;
  return { held: new Set(row.held), claimed: row.claimed ?? [] };
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
