import { sql } from 'kysely';
import { prepared } from '../../db/pg-pool.js';
import type { Executor, TaskRow } from '../../db/types.js';
import { insertLabelRows, jsonText, notifyChanged, notifyReady } from './common.js';
import type { NewTask } from './insert.js';

/**
 * Stores many new tasks in one statement, as `insertTask` stores each (the same columns,
 * times, labels and notifications; no webhook, no lease, no debounce), in the order given. A
 * task whose idempotency key its owner already used (before, or earlier in `tasks`) is not
 * stored: it has no row in the answer, and its caller settles it as `insertTask` would, alone.
 * Statement text is the same for any number of tasks (one array a column): prepared once per
 * connection.
 * @returns the rows stored, by id
 */
export async function insertTasks(
  db: Executor,
  tasks: readonly NewTask[],
): Promise<Map<string, TaskRow>> {
  const col = <T>(pick: (task: NewTask) => T) => tasks.map(pick);
  const result = await sql<TaskRow>`${prepared}
    with c as (select date_trunc('milliseconds', now()) as at),
    r as (
      select r.*, date_trunc('milliseconds', r.run_at_asked) as asked
      from unnest(${col((t) => t.id)}::uuid[], ${col((t) => t.owner)}::text[],
                  ${col((t) => t.kind)}::text[],
                  ${col((t) => jsonText(t.input))}::jsonb[], ${col((t) => t.ttlMs)}::int[],
                  ${col((t) => t.pollIntervalMs)}::int[], ${col((t) => t.idempotencyKey)}::text[],
                  ${col((t) => t.retry.maxAttempts)}::int[], ${col((t) => t.timeoutMs)}::int[],
                  ${col((t) => t.runAt?.toISOString() ?? null)}::timestamptz[],
                  ${col((t) => t.priority)}::int[], ${col((t) => t.concurrencyKey)}::text[],
                  ${col((t) => t.concurrencyLimit)}::int[],
                  ${col((t) => t.retry.initialDelayMs)}::int[], ${col((t) => t.retry.factor)}::float8[],
                  ${col((t) => t.retry.maxDelayMs)}::int[], ${col((t) => jsonText(t.labels ?? {}))}::jsonb[],
                  ${col((t) => t.retryOf ?? null)}::uuid[], ${col((t) => t.traceParent ?? null)}::text[],
                  ${col((t) => t.scheduleKey ?? null)}::text[],
                  ${col((t) => t.rateLimitKey ?? null)}::text[], ${col((t) => t.rateLimit?.limit ?? null)}::int[],
                  ${col((t) => t.rateLimit?.periodMs ?? null)}::int[])
        with ordinality as r(id, owner, kind, input, ttl_ms, poll_interval_ms, idempotency_key,
                             max_attempts, timeout_ms, run_at_asked, priority, concurrency_key,
                             concurrency_limit, retry_initial_delay_ms, retry_factor,
                             retry_max_delay_ms, labels, retry_of, trace_parent, schedule_key,
                             rate_limit_key, rate_limit, rate_period_ms, n)
    ), t as (
      insert into tasks (id, owner, kind, input, ttl_ms, created_at, last_updated_at, expires_at,
                         poll_interval_ms, idempotency_key, max_attempts, timeout_ms, run_at, hold,
                         priority, concurrency_key, concurrency_limit, retry_initial_delay_ms,
                         retry_factor, retry_max_delay_ms, labels, retry_of, trace_parent,
                         schedule_key, rate_limit_key, rate_limit, rate_period_ms)
      select r.id, r.owner, r.kind, r.input, r.ttl_ms, c.at, c.at,
             c.at + r.ttl_ms * interval '1 millisecond', r.poll_interval_ms, r.idempotency_key,
             r.max_attempts, r.timeout_ms, greatest(c.at, r.asked),
             case when r.asked > c.at then 'time' end, r.priority, r.concurrency_key,
             r.concurrency_limit, r.retry_initial_delay_ms, r.retry_factor, r.retry_max_delay_ms,
             r.labels, r.retry_of, r.trace_parent, r.schedule_key, r.rate_limit_key,
             r.rate_limit, r.rate_period_ms
      -- in the order given: of two tasks with one key, the first is stored
      from r, c order by r.n
      on conflict (owner, idempotency_key) where idempotency_key is not null do nothing
      returning *
    ), l as (${insertLabelRows}), announced as (
      select ${notifyChanged}, ${notifyReady} from t
    )
    -- notified by the condition (evaluated once), so that the rows are the tasks' own
    select t.* from t where (select count(*) from announced) >= 0`.execute(db);
  const rows = new Map<string, TaskRow>();
  for (const row of result.rows) rows.set(row.id, row);
  return rows;
}
