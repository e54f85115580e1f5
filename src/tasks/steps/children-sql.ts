import { sql } from 'kysely';
import type { Executor, TaskRow } from '../../db/types.js';
import {
  insertLabelRows,
  jsonText,
  notifyChanged,
  notifyReady,
  withoutNotifyColumns,
} from '../sql/common.js';
import type { NewTask } from '../sql/insert.js';
import type { Lease } from '../sql/leases.js';

/** Most children one task may start (DESIGN §16). */
export const MAX_CHILDREN = 10_000;

/** A child to start under a journal name, in the order its step first ran. */
export interface NewChild {
  name: string;
  position: number;
  task: NewTask;
}

/**
 * Starts children of task `parentId` and journals each under its name, in one statement: a
 * child and its journal entry commit together, so a crash between starting children and
 * waiting for them starts none twice (the next run finds the entry and gets the same child).
 * Fenced by the parent's lease, and by MAX_CHILDREN (counted on the parent row). A child's
 * retention never outlasts its parent's: its `expires_at` is at most the parent's. Each child
 * is announced and the workers woken, as a start's insert does.
 * @returns the children stored, by name; empty when the lease no longer holds or the limit
 *   would be passed (nothing stored)
 */
export async function startChildren(
  db: Executor,
  parentId: string,
  lease: Lease,
  children: readonly NewChild[],
): Promise<Map<string, TaskRow>> {
  const col = <T>(pick: (c: NewChild) => T) => children.map(pick);
  const task = (c: NewChild) => c.task;
  const result = await sql<TaskRow & { step_name: string }>`
    with p as (
      update tasks set children_count = children_count + ${children.length}::int, journaled = true
      where id = ${parentId}::uuid and worker_id = ${lease.workerId} and attempt = ${lease.attempt}::int
        and status = 'working' and expires_at > now()
        and children_count + ${children.length}::int <= ${MAX_CHILDREN}::int
      returning id, expires_at, date_trunc('milliseconds', now()) as at
    ), c as (
      select x.*, least(p.at + x.ttl_ms * interval '1 millisecond', p.expires_at) as expires_at
      from p, unnest(
        ${col((c) => task(c).id)}::uuid[], ${col((c) => c.name)}::text[], ${col((c) => c.position)}::int[],
        ${col((c) => task(c).owner)}::text[], ${col((c) => task(c).kind)}::text[],
        ${col((c) => jsonText(task(c).input))}::jsonb[], ${col((c) => task(c).ttlMs)}::int[],
        ${col((c) => task(c).pollIntervalMs)}::int[], ${col((c) => task(c).timeoutMs)}::int[],
        ${col((c) => task(c).retry.maxAttempts)}::int[], ${col((c) => task(c).priority)}::int[],
        ${col((c) => task(c).concurrencyKey)}::text[], ${col((c) => task(c).concurrencyLimit)}::int[],
        ${col((c) => task(c).retry.initialDelayMs)}::int[], ${col((c) => task(c).retry.factor)}::float8[],
        ${col((c) => task(c).retry.maxDelayMs)}::int[], ${col((c) => jsonText(task(c).labels ?? {}))}::jsonb[],
        ${col((c) => task(c).traceParent ?? null)}::text[],
        ${col((c) => task(c).rateLimitKey ?? null)}::text[],
        ${col((c) => task(c).rateLimit?.limit ?? null)}::int[],
        ${col((c) => task(c).rateLimit?.periodMs ?? null)}::int[]
      ) as x(id, name, position, owner, kind, input, ttl_ms, poll_interval_ms, timeout_ms,
             max_attempts, priority, concurrency_key, concurrency_limit, retry_initial_delay_ms,
             retry_factor, retry_max_delay_ms, labels, trace_parent, rate_limit_key, rate_limit,
             rate_period_ms)
    ), t as (
      insert into tasks (id, owner, kind, input, ttl_ms, created_at, last_updated_at, expires_at,
                         poll_interval_ms, max_attempts, timeout_ms, run_at, priority,
                         concurrency_key, concurrency_limit, retry_initial_delay_ms, retry_factor,
                         retry_max_delay_ms, labels, trace_parent, parent_id, rate_limit_key,
                         rate_limit, rate_period_ms)
      select c.id, c.owner, c.kind, c.input,
             greatest(1, (extract(epoch from c.expires_at - p.at) * 1000)::int),
             p.at, p.at, c.expires_at, c.poll_interval_ms, c.max_attempts, c.timeout_ms, p.at,
             c.priority, c.concurrency_key, c.concurrency_limit, c.retry_initial_delay_ms,
             c.retry_factor, c.retry_max_delay_ms, c.labels, c.trace_parent, p.id,
             c.rate_limit_key, c.rate_limit, c.rate_period_ms
      from c, p
      returning *
    ), l as (${insertLabelRows}), s as (
      insert into task_steps (task_id, name, position, state, attempts, ended_at, child_id)
      select p.id, c.name, c.position, 'COMPLETED', 1, now(), c.id from p, c
    )
    select t.*, c.name as step_name, ${notifyChanged} as notified, ${notifyReady} as ready
    from t join c on c.id = t.id`.execute(db);
  return new Map(
    result.rows.map(({ step_name, ...row }) => [
      step_name,
      withoutNotifyColumns(row as TaskRow) as TaskRow,
    ]),
  );
}
