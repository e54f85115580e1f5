import { type RawBuilder, sql } from 'kysely';
import type { Executor, TaskRow } from '../../db/types.js';
import type { InputRequest, TaskFailure, TaskStatus } from '../status.js';
import { json, notifyChanged, notifyReady, withoutNotifyColumns } from './common.js';

/**
 * The worker's queries. A claim is a lease: (worker_id, attempt) is its fencing token, and
 * every write below matches it, so a worker that lost its lease changes nothing.
 */

export interface Lease {
  workerId: string;
  attempt: number;
}

/**
 * A task a worker may claim: WORKING, unexpired, with no live lease and attempts left. The
 * claim and the queue's metrics (stats.ts) ask the same question.
 */
export const claimable = sql`status = 'working' and expires_at > now()
  and (lease_expires_at is null or lease_expires_at < now()) and attempt < max_attempts`;

/**
 * Claims up to `limit` runnable tasks of the given kinds, oldest first, skipping rows other
 * workers hold. A runnable task is WORKING, unexpired, with no live lease and attempts left;
 * `attempt` counts the claim.
 *
 * The claim commits without waiting for its WAL flush (`synchronous_commit = off` for this
 * transaction only): a claim lost in a Postgres crash just leaves the task claimable again,
 * which at-least-once execution allows, and the worker starts one disk flush sooner.
 */
export async function claimTasks(
  db: Executor,
  workerId: string,
  kinds: readonly string[],
  limit: number,
  leaseMs: number,
): Promise<TaskRow[]> {
  const result = await sql<TaskRow>`
    update tasks t
    set worker_id = ${workerId}, lease_expires_at = now() + ${leaseMs}::int * interval '1 millisecond',
        attempt = t.attempt + 1
    from (
      select id from tasks
      where ${claimable} and kind = any(${kinds}::text[])
      order by created_at
      limit ${limit}::int
      for update skip locked
    ) c, (select set_config('synchronous_commit', 'off', true)) async_commit
    where t.id = c.id
    returning t.*`.execute(db);
  return result.rows;
}

/**
 * Fails tasks whose lease lapsed after their last allowed attempt (WORKER_LOST). Unleased
 * tasks waiting for a person are left alone: nobody is running them.
 */
export async function failLostTasks(db: Executor, limit = 100): Promise<TaskRow[]> {
  const failure: TaskFailure = {
    code: 'WORKER_LOST',
    message: 'The task was claimed the maximum number of times and its worker was lost each time.',
  };
  const result = await sql<TaskRow>`
    with t as (
      update tasks t
      set status = 'failed', error = ${json(failure)}, version = t.version + 1, last_updated_at = now(),
          worker_id = null, lease_expires_at = null, input_request = null
      from (
        select id from tasks
        where status = 'working' and lease_expires_at < now() and attempt >= max_attempts and expires_at > now()
        limit ${limit}::int
        for update skip locked
      ) c
      where t.id = c.id
      returning t.*
    )
    select t.*, ${notifyChanged} as notified from t`.execute(db);
  return result.rows.map((row) => withoutNotifyColumns(row)!);
}

/**
 * Renews the leases this worker still holds.
 * @returns id → status of the tasks still held (any other was lost, cancelled or finished);
 *   the status lets the runner notice an answer whose notification it missed
 */
export async function renewLeases(
  db: Executor,
  workerId: string,
  leases: ReadonlyArray<{ id: string; attempt: number }>,
  leaseMs: number,
): Promise<Map<string, TaskStatus>> {
  if (leases.length === 0) return new Map();
  const result = await sql<{ id: string; status: TaskStatus }>`
    update tasks t set lease_expires_at = now() + ${leaseMs}::int * interval '1 millisecond'
    from unnest(${leases.map((l) => l.id)}::uuid[], ${leases.map((l) => l.attempt)}::int[]) as h(id, attempt)
    where t.id = h.id and t.attempt = h.attempt and t.worker_id = ${workerId}
      and t.status in ('working', 'input_required')
    returning t.id, t.status`.execute(db);
  return new Map(result.rows.map((r) => [r.id, r.status]));
}

async function fencedChange(
  db: Executor,
  id: string,
  lease: Lease,
  from: string,
  set: RawBuilder<unknown>,
  wake = false,
): Promise<TaskRow | undefined> {
  const result = await sql<TaskRow>`
    with t as (
      update tasks set ${set}, version = version + 1, last_updated_at = now()
      where id = ${id}::uuid and worker_id = ${lease.workerId} and attempt = ${lease.attempt}::int
        and status = ${from} and expires_at > now()
      returning *
    )
    select t.*, ${notifyChanged} as notified${wake ? sql`, ${notifyReady} as ready` : sql.raw('')} from t`.execute(
    db,
  );
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

export function completeTask(db: Executor, id: string, lease: Lease, result: unknown) {
  return fencedChange(
    db,
    id,
    lease,
    'working',
    sql`status = 'completed', result = ${json(result ?? null)}, progress = 1, status_message = null, worker_id = null, lease_expires_at = null`,
  );
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
    sql`status = 'failed', error = ${json(failure)}, input_request = null, worker_id = null, lease_expires_at = null`,
  );
}

/**
 * The request's message stays in `input_request` (owner only): `status_message` is metadata an
 * admin reads, so it gets a fixed text, never the question.
 */
export function markInputRequired(db: Executor, id: string, lease: Lease, request: InputRequest) {
  return fencedChange(
    db,
    id,
    lease,
    'working',
    sql`status = 'input_required', input_request = ${json(request)}, status_message = 'Waiting for input.'`,
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
