import { type RawBuilder, sql } from 'kysely';
import type { Executor, TaskRow } from '../../db/types.js';
import type { InputRequest, TaskFailure, TaskStatus } from '../status.js';
import { json, jsonText, notifyChanged, notifyReady, withoutNotifyColumns } from './common.js';
import { recordOutcomes } from './outcomes.js';

/**
 * The worker's queries. A claim is a lease: (worker_id, attempt) is its fencing token, and
 * every write below matches it, so a worker that lost its lease changes nothing.
 */

export interface Lease {
  workerId: string;
  attempt: number;
}

/**
 * Fails tasks whose lease lapsed after their last allowed attempt (WORKER_LOST). Unleased
 * tasks waiting for a person are left alone: nobody is running them. A leased task waits for
 * nothing (`hold is null`): saying so lets this backstop, which every worker runs every two
 * seconds, walk the index of ready work (tasks_ready) instead of the whole table. A lapsed task
 * a claim held back by its key is failed once the key lets it go again.
 */
export async function failLostTasks(db: Executor, limit = 100): Promise<TaskRow[]> {
  const failure: TaskFailure = {
    code: 'WORKER_LOST',
    message: 'The task was claimed the maximum number of times and its worker was lost each time.',
  };
  const result = await sql<TaskRow>`
    with t as (
      update tasks t
      set status = 'failed', error = ${json(failure)}, last_error = ${json(failure)},
          version = t.version + 1, last_updated_at = now(),
          worker_id = null, lease_expires_at = null, input_request = null, input_requests = null
      from (
        select id from tasks
        where status = 'working' and hold is null and lease_expires_at < now()
          and attempt >= max_attempts and expires_at > now()
        limit ${limit}::int
        for update skip locked
      ) c
      where t.id = c.id
      returning t.*
    )
    select t.*, ${notifyChanged} as notified from t`.execute(db);
  return result.rows.map((row) => withoutNotifyColumns(row)!);
}

/** What a renewal found of a task: renewed in its status, or `busy` (see {@link renewLeases}). */
export type Renewal = TaskStatus | 'busy';

/**
 * Renews the leases this worker still holds. A row another transaction holds locked at that
 * moment (this worker's own outcome or step, a cancel) is skipped rather than waited for: a
 * renewal that waited could deadlock with the outcomes this worker is writing, which lock many
 * of the same rows in another order, and Postgres would fail one of the two. A skipped task
 * that was still held as the renewal read it comes back `busy`: not renewed this time, not
 * lost either.
 * @returns id → status of the tasks renewed, or `busy`; any other task was lost, cancelled or
 *   finished (the status lets the runner notice an answer whose notification it missed)
 */
export async function renewLeases(
  db: Executor,
  workerId: string,
  leases: ReadonlyArray<{ id: string; attempt: number }>,
  leaseMs: number,
): Promise<Map<string, Renewal>> {
  if (leases.length === 0) return new Map();
  // Read once as of the statement's start (held), and again on each row as it is locked.
  const stillHeld = sql`t.attempt = h.attempt and t.worker_id = ${workerId}
    and t.status in ('working', 'input_required')`;
  const result = await sql<{ id: string; status: TaskStatus | null }>`
    with h as (
      select * from unnest(${leases.map((l) => l.id)}::uuid[],
                           ${leases.map((l) => l.attempt)}::int[]) as h(id, attempt)
    ), held as (
      select t.id from tasks t join h on t.id = h.id where ${stillHeld}
    ), locked as (
      select t.id from tasks t join h on t.id = h.id where ${stillHeld}
      for update of t skip locked
    ), renewed as (
      update tasks t set lease_expires_at = now() + ${leaseMs}::int * interval '1 millisecond'
      from locked where t.id = locked.id
      returning t.id, t.status
    )
    select id, status from renewed
    union all
    select id, null from held where id not in (select id from locked)`.execute(db);
  return new Map(result.rows.map((r) => [r.id, r.status ?? 'busy']));
}

/** Which of the tasks `ids` are cancelled (a lease renewal that lost them asks why). */
export async function cancelledAmong(db: Executor, ids: readonly string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const result = await sql<{ id: string }>`
    select id from tasks where id = any(${ids}::uuid[]) and status = 'cancelled'`.execute(db);
  return new Set(result.rows.map((r) => r.id));
}

async function fencedChange(
  db: Executor,
  id: string,
  lease: Lease,
  from: string,
  set: RawBuilder<unknown>,
): Promise<TaskRow | undefined> {
  const result = await sql<TaskRow>`
    with t as (
      update tasks set ${set}, version = version + 1, last_updated_at = now()
      where id = ${id}::uuid and worker_id = ${lease.workerId} and attempt = ${lease.attempt}::int
        and status = ${from} and expires_at > now()
      returning *
    )
    select t.*, ${notifyChanged} as notified from t`.execute(db);
  return withoutNotifyColumns(result.rows[0]);
}

export function reportProgress(
  db: Executor,
  id: string,
  lease: Lease,
  progress: number | null,
  message: string | null,
) {
  return fencedChange(
    db,
    id,
    lease,
    'working',
    sql`progress = coalesce(${progress}::float8, progress), status_message = ${message}`,
  );
}

/** Completes the task (`recordOutcomes`' rule, for one task). */
export async function completeTask(db: Executor, id: string, lease: Lease, result: unknown) {
  const [row] = await recordOutcomes(db, [
    { id, lease, ending: 'complete', result: jsonText(result ?? null) },
  ]);
  return row as TaskRow | undefined;
}

/** Fails the task; `from` is the status it must be in (a timeout may strike while it waits). */
export function failTask(
  db: Executor,
  id: string,
  lease: Lease,
  failure: TaskFailure,
  from: 'working' | 'input_required' = 'working',
) {
  return fencedChange(
    db,
    id,
    lease,
    from,
    sql`status = 'failed', error = ${json(failure)}, last_error = ${json(failure)}, input_request = null, input_requests = null, worker_id = null, lease_expires_at = null`,
  );
}

/**
 * Ends a failed attempt (DESIGN §14): while attempts remain and the next one, `delayMs` from
 * now, falls before expiry, the task stays WORKING, waiting for its time, with `last_error`
 * and a status message saying what failed and when it runs next; otherwise it fails with
 * `failure`. Either way the lease is given up and the change announced (and, for a retry,
 * the runners woken so one of them sets its timer for the due time).
 */
export async function retryOrFail(
  db: Executor,
  id: string,
  lease: Lease,
  failure: TaskFailure,
  delayMs: number,
): Promise<TaskRow | undefined> {
  const [row] = await recordOutcomes(db, [{ id, lease, ending: 'retry', failure, delayMs }]);
  return row as TaskRow | undefined;
}

/**
 * Asks `requests` (one or more, in order) at once: they go to `input_requests`, the first also
 * to `input_request`. The messages stay there (owner only): `status_message` is metadata an
 * admin reads, so it gets a fixed text, never a question.
 */
export function markInputRequired(
  db: Executor,
  id: string,
  lease: Lease,
  requests: readonly [InputRequest, ...InputRequest[]],
) {
  return fencedChange(
    db,
    id,
    lease,
    'working',
    sql`status = 'input_required', input_request = ${json(requests[0])},
        input_requests = ${json(requests)}, status_message = 'Waiting for input.'`,
  );
}

/**
 * Gives tasks back without counting the attempt (a graceful stop), so another worker claims
 * them at once. Waiting tasks stay INPUT_REQUIRED, unleased.
 */
export async function releaseLeases(
  db: Executor,
  workerId: string,
  leases: ReadonlyArray<{ id: string; attempt: number }>,
): Promise<number> {
  if (leases.length === 0) return 0;
  const result = await sql<{ id: string }>`
    with t as (
      update tasks t set worker_id = null, lease_expires_at = null, attempt = greatest(t.attempt - 1, 0)
      from unnest(${leases.map((l) => l.id)}::uuid[], ${leases.map((l) => l.attempt)}::int[]) as h(id, attempt)
      where t.id = h.id and t.attempt = h.attempt and t.worker_id = ${workerId}
      returning t.id, t.kind
    )
    select t.id, ${notifyReady} as ready from t`.execute(db);
  return result.rows.length;
}
