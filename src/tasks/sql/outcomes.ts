import { sql } from 'kysely';
import { prepared } from '../../db/pg-pool.js';
import type { Executor, TaskRow } from '../../db/types.js';
import type { TaskFailure } from '../status.js';
import { jsonText, notifyChanged, READY_CHANNEL } from './common.js';
import type { Lease } from './leases.js';

/**
 * What an outcome's statement returns for a task whose row nobody here wants (see
 * {@link recordOutcomes}): enough to tell what became of it, and to announce it.
 */
export type OutcomeSummary = Pick<TaskRow, 'id' | 'version' | 'status' | 'run_at'> & {
  summary: true;
};

/** A row an outcome wrote: whole, or its summary. */
export type WrittenOutcome = TaskRow | OutcomeSummary;

export const isSummary = (row: WrittenOutcome): row is OutcomeSummary => 'summary' in row;

/** How a handler's attempt ended, as {@link recordOutcomes} writes it. */
export type Outcome =
  /** `result` is JSON text (`null`: JSON null), see `jsonText`. */
  | { id: string; lease: Lease; ending: 'complete'; result: string | null }
  | { id: string; lease: Lease; ending: 'fail'; failure: TaskFailure }
  | { id: string; lease: Lease; ending: 'retry'; failure: TaskFailure; delayMs: number };

/**
 * Records many outcomes in one statement: the rule of how an attempt ends, written once
 * (leases.ts's `completeTask` and `retryOrFail` are this for one task; `fail` writes what its
 * `failTask` writes for a running task, which also fails a waiting one). Every row is fenced by its own lease (worker and attempt), WORKING and
 * unexpired only; each changed row is announced (and a retried one wakes the runners). A
 * transaction that notifies holds Postgres's notify lock until its commit is flushed, so one
 * commit for many tasks is what lets a worker finish more than one task per WAL flush. Its text
 * is the same for any number of outcomes (one array a column), so each connection prepares it
 * once: parsing and planning it cost Postgres more than running it.
 *
 * Only the rows `whole` asks for come back whole (a watcher or the row cache wants them); the others
 * come back as their summary, since reading forty columns, five timestamps and three JSON
 * values of every task a worker finishes cost it a tenth of its CPU in the drain benchmark. A
 * batch that asks for no whole row is sent as a second text, which returns the summary's
 * columns only (each text is prepared once per connection).
 * @returns the rows written; an outcome whose lease no longer holds has none
 */
export async function recordOutcomes(
  db: Executor,
  outcomes: readonly Outcome[],
  whole: (id: string) => boolean = () => true,
): Promise<WrittenOutcome[]> {
  const col = <T>(pick: (o: Outcome) => T) => outcomes.map(pick);
  const isComplete = sql`c.ending = 'complete'`;
  // Retried: attempts remain and the next one, delay_ms from now, falls before expiry.
  const again = sql`(c.ending = 'retry' and t.attempt < t.max_attempts
    and now() + c.delay_ms * interval '1 millisecond' < t.expires_at)`;
  const at = sql`now() + c.delay_ms * interval '1 millisecond'`;
  const wanted = outcomes.map((o) => whole(o.id));
  // The whole row where asked (f), else nulls but for the summary's columns, which come after
  // f's under the same names and so are the ones read. When no row is asked for (a worker
  // draining a backlog nobody here watches), the summary's columns alone: pg parses every
  // column it is sent into each row's object, nulls included, fifty-odd a task.
  const returned = wanted.includes(true)
    ? sql`f.*, t.id, t.version, t.status, t.run_at, t.whole
    from t left join lateral (select t.* where t.whole) f on true`
    : sql`t.id, t.version, t.status, t.run_at, t.whole from t`;
  const result = await sql<TaskRow & { again: boolean; whole: boolean }>`${prepared}
    with t as (
      update tasks t set
        status = case when ${isComplete} then 'completed' when ${again} then 'working' else 'failed' end,
        result = case when ${isComplete} then c.result else t.result end,
        progress = case when ${isComplete} then 1 when ${again} then null else t.progress end,
        status_message = case when ${isComplete} then null
          when ${again} then 'Attempt ' || t.attempt || ' of ' || t.max_attempts || ' failed ('
            || (c.failure->>'code') || '); the next runs at '
            || to_char((${at}) at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') || '.'
          else t.status_message end,
        error = case when ${isComplete} then t.error when ${again} then null else c.failure end,
        last_error = case when ${isComplete} then t.last_error else c.failure end,
        input_request = case when ${isComplete} then t.input_request end,
        input_requests = case when ${isComplete} then t.input_requests end,
        hold = case when c.ending = 'fail' or ${isComplete} then t.hold when ${again} then 'time' end,
        run_at = case when ${again} then date_trunc('milliseconds', ${at}) else t.run_at end,
        ran_ms = case when ${again} then 0 else t.ran_ms end,
        worker_id = null, lease_expires_at = null, version = t.version + 1, last_updated_at = now()
      from unnest(${col((o) => o.id)}::uuid[], ${col((o) => o.lease.workerId)}::text[],
                  ${col((o) => o.lease.attempt)}::int[], ${col((o) => o.ending)}::text[],
                  ${col((o) => (o.ending === 'complete' ? o.result : null))}::jsonb[],
                  ${col((o) => (o.ending === 'complete' ? null : jsonText(o.failure)))}::jsonb[],
                  ${col((o) => (o.ending === 'retry' ? o.delayMs : 0))}::int[],
                  ${wanted}::boolean[])
        as c(id, worker_id, attempt, ending, result, failure, delay_ms, whole)
      where t.id = c.id and t.worker_id = c.worker_id and t.attempt = c.attempt
        and t.status = 'working' and t.expires_at > now()
      returning t.*, c.ending = 'retry' and t.status = 'working' as again, c.whole
    ), announced as (
      select ${notifyChanged}, case when t.again then pg_notify(${READY_CHANNEL}, t.kind) end
      from t
    )
    -- The notifications are sent by the condition (evaluated once), so that no column of
    -- theirs comes back.
    select ${returned}
    where (select count(*) from announced) >= 0`.execute(db);
  const rows: WrittenOutcome[] = [];
  for (const row of result.rows) {
    if (row.whole) {
      const { again: _again, whole: _whole, ...task } = row;
      rows.push(task);
    } else
      rows.push({
        id: row.id,
        version: row.version,
        status: row.status,
        run_at: row.run_at,
        summary: true,
      });
  }
  return rows;
}
