import { type RawBuilder, sql } from 'kysely';
import { prepared } from '../../db/pg-pool.js';
import type { Executor, TaskRow } from '../../db/types.js';
import type { Debounce } from '../debounce.js';
import type { RetryPolicy } from '../retry.js';
import {
  insertLabelRows,
  json,
  notifyChanged,
  notifyReady,
  withoutNotifyColumns,
} from './common.js';
import { joinOpenBurst, labelsReplaced, releaseExpiredBurst } from './debounce.js';

export interface NewTask {
  id: string;
  owner: string;
  kind: string;
  input: unknown;
  ttlMs: number;
  pollIntervalMs: number;
  timeoutMs: number;
  idempotencyKey: string | null;
  /** Not claimed before this instant (null: at once). */
  runAt: Date | null;
  priority: number;
  concurrencyKey: string | null;
  concurrencyLimit: number | null;
  /** DESIGN §17: the rate limit key as given, and the limit of first starts (null: none). */
  rateLimitKey?: string | null;
  rateLimit?: { limit: number; periodMs: number } | null;
  retry: RetryPolicy;
  /** DESIGN §15: checked labels (`{}` for none) and the task this one runs again. */
  labels?: Record<string, string>;
  retryOf?: string | null;
  /** DESIGN §13: the W3C traceparent of the request that starts it (null: not traced). */
  traceParent?: string | null;
  /** DESIGN §17: the schedule whose occurrence this task is. */
  scheduleKey?: string | null;
  /** DESIGN §17: the burst this start belongs to; the task is due `delayMs` from now. */
  debounce?: Debounce | null;
}

/** The lease a task inserted already claimed is stored with: what a claim would give it. */
export interface InsertLease {
  workerId: string;
  leaseMs: number;
}

export type InsertOutcome =
  | { created: true; row: TaskRow }
  | {
      created: false;
      row: TaskRow;
      sameRequest: boolean;
      /** DESIGN §17: the start joined its key's open burst (the row is that task, changed). */
      joined?: boolean;
    };

/** The columns a start writes, in the order of {@link startValues}. */
const COLUMNS = sql`(id, owner, kind, input, ttl_ms, created_at, last_updated_at, expires_at,
  poll_interval_ms, idempotency_key, max_attempts, timeout_ms, run_at, hold,
  priority, concurrency_key, concurrency_limit, retry_initial_delay_ms,
  retry_factor, retry_max_delay_ms, labels, retry_of, trace_parent,
  worker_id, attempt, lease_expires_at, schedule_key, debounce_key, debounce_max_delay_ms,
  rate_limit_key, rate_limit, rate_period_ms)`;

/**
 * The row a start writes, as a `select`: created now, due at its runAt (or, debounced, its
 * delay from now), and held for its time while that is ahead.
 */
function startValues(task: NewTask, lease: InsertLease | undefined): RawBuilder<unknown> {
  return sql`
    select ${task.id}::uuid, ${task.owner}, ${task.kind}, ${json(task.input)}, ${task.ttlMs}::int,
           c.at, c.at, c.at + ${task.ttlMs}::int * interval '1 millisecond', ${task.pollIntervalMs}::int,
           ${task.idempotencyKey}, ${task.retry.maxAttempts}::int, ${task.timeoutMs}::int,
           c.run_at, case when c.run_at > c.at then 'time' end,
           ${task.priority}::int, ${task.concurrencyKey}, ${task.concurrencyLimit}::int,
           ${task.retry.initialDelayMs}::int, ${task.retry.factor}::float8, ${task.retry.maxDelayMs}::int,
           ${json(task.labels ?? {})}, ${task.retryOf ?? null}::uuid, ${task.traceParent ?? null}::text,
           ${lease?.workerId ?? null}::text, ${lease ? 1 : 0}::int,
           c.at + ${lease?.leaseMs ?? null}::int * interval '1 millisecond',
           ${task.scheduleKey ?? null}::text, ${task.debounce?.key ?? null}::text,
           ${task.debounce?.maxDelayMs ?? null}::int, ${task.rateLimitKey ?? null}::text,
           ${task.rateLimit?.limit ?? null}::int, ${task.rateLimit?.periodMs ?? null}::int
    -- millisecond precision: cursors and expiresAt round-trip through JS Dates exactly
    from (
      select n.at, greatest(n.at, coalesce(date_trunc('milliseconds', ${task.runAt}::timestamptz),
                                           n.at + ${task.debounce?.delayMs ?? null}::int * interval '1 millisecond')) as run_at
      from (select date_trunc('milliseconds', now()) as at) n
    ) c`;
}

/**
 * Stores a new task, announces it (owner-level subscribers list it) and wakes the workers, in
 * one statement (with `extra`, a webhook and its first delivery too), prepared on each
 * connection: parsing and planning it each time cost Postgres more than running it (0.44-0.55
 * against 0.13-0.24 ms; with a webhook, 0.82-0.84 against 0.29-0.36 ms). With an idempotency
 * key already used by this owner, creates nothing and returns the existing task, saying whether
 * it was started with the same kind and input (jsonb equality ignores key order and spacing).
 * A key whose task has expired is free again. A debounced task joins its key's open burst
 * instead, when there is one ({@link upsertDebounced}).
 */
export async function insertTask(
  db: Executor,
  task: NewTask,
  /**
   * More for the same statement: CTEs after `t`, columns after its own (tasks/webhooks/store.ts).
   * Its CTEs must act on the row of `task.id` only: `t` holds another task when a debounced
   * start joins it.
   */
  extra?: { ctes: RawBuilder<unknown>; column: RawBuilder<unknown> },
  /**
   * The insert is the claim: the row is stored leased to `lease.workerId` (attempt 1 and the
   * lease's expiry, as a claim would leave it), and the workers are not woken for it. Never
   * with a debounce: a task inserted started would open no burst.
   */
  lease?: InsertLease,
): Promise<InsertOutcome> {
  if (task.debounce) return upsertDebounced(db, task, extra);
  for (;;) {
    const inserted = await sql<TaskRow>`${prepared}
      with t as (
        insert into tasks ${COLUMNS} ${startValues(task, lease)}
        on conflict (owner, idempotency_key) where idempotency_key is not null do nothing
        returning *
      ), l as (${insertLabelRows})${extra?.ctes ?? sql``}
      select t.*, ${notifyChanged} as notified,
        case when t.worker_id is null then ${notifyReady} end as ready${extra?.column ?? sql``}
      from t`.execute(db);
    const row = inserted.rows[0];
    if (row) return { created: true, row: withoutNotifyColumns(row)! };

    const existing = await sql<TaskRow & { same: boolean; expired: boolean }>`
      select t.*, (t.kind = ${task.kind} and t.input is not distinct from ${json(task.input)}) as same,
             t.expires_at <= now() as expired
      from tasks t where t.owner = ${task.owner} and t.idempotency_key = ${task.idempotencyKey}`.execute(
      db,
    );
    const found = existing.rows[0];
    if (found && !found.expired) {
      const { same, expired: _expired, ...rest } = found;
      return { created: false, row: rest, sameRequest: same };
    }
    if (found) {
      // The key's task is past its retention: it is gone, so the key is free. Drop the row early.
      await sql`
        with gone as (
          delete from tasks where id = ${found.id}::uuid and expires_at <= now() returning id
        )
        delete from task_labels where task_id in (select id from gone)`.execute(db);
    }
  }
}

/**
 * A debounced start (DESIGN §17) in one statement: inserts the task, or, when its key has an
 * open burst, changes that task instead (`joinOpenBurst`), with its label rows, its
 * announcement and its wake-up; either way under the burst's unique index, so concurrent
 * starts of a burst in any number of processes make one task. A burst whose task expired
 * unstarted is let go, and the start tried again.
 */
async function upsertDebounced(
  db: Executor,
  task: NewTask,
  extra: { ctes: RawBuilder<unknown>; column: RawBuilder<unknown> } | undefined,
): Promise<InsertOutcome> {
  for (;;) {
    const upserted = await sql<TaskRow>`${prepared}
      with t as (
        insert into tasks as x ${COLUMNS} ${startValues(task, undefined)}
        ${joinOpenBurst(task.debounce!)}
        returning *
      ), ${labelsReplaced(task.id)}${extra?.ctes ?? sql``}
      select t.*, ${notifyChanged} as notified, ${notifyReady} as ready${extra?.column ?? sql``}
      from t`.execute(db);
    const row = withoutNotifyColumns(upserted.rows[0]);
    if (row?.id === task.id) return { created: true, row };
    if (row) return { created: false, row, sameRequest: true, joined: true };
    await releaseExpiredBurst(db, task.owner, task.kind, task.debounce!.key);
  }
}
