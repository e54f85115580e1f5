import { sql } from 'kysely';
import { prepared } from '../db/pg-pool.js';
import type { Executor, ScheduleRow } from '../db/types.js';
import { SCHEDULE_CHANNEL } from '../tasks/events/hub.js';
import { json } from '../tasks/sql/common.js';
import type { MissedPolicy, OverlapPolicy } from './schedule.js';

/**
 * The queries behind schedules (DESIGN §17), executor first. Every statement that changes a
 * schedule notifies SCHEDULE_CHANNEL, so each process that fires schedules re-reads the
 * earliest occurrence.
 */

const notify = sql`pg_notify(${SCHEDULE_CHANNEL}, '')`;

/** jsonb, or SQL null for null (where `json` would store the JSON value null). */
const jsonOrNull = (value: unknown) => (value === null || value === undefined ? null : json(value));

/** A schedule checked and ready to store. */
export interface NewSchedule {
  owner: string;
  key: string;
  cron: string;
  timezone: string;
  kind: string;
  input: unknown;
  missed: MissedPolicy;
  overlap: OverlapPolicy;
  /** null: as it is (false for a new schedule). */
  paused: boolean | null;
  priority: number | null;
  labels: Record<string, string> | null;
  retry: Record<string, number | null> | null;
  ttlMs: number | null;
  concurrencyKey: string | null;
  /** The first occurrence after now, should the schedule run from now on. */
  nextRunAt: Date | null;
}

/**
 * The owner's schedules, and whether `key` is one of them, under a lock on the owner's
 * schedules held to the end of the transaction: a count that a concurrent insert cannot pass.
 */
export async function countLocked(
  trx: Executor,
  owner: string,
  key: string,
): Promise<{ count: number; exists: boolean }> {
  await sql`select pg_advisory_xact_lock(hashtextextended(${`taskhandle_schedules:${owner}`}, 0))`.execute(
    trx,
  );
  const { rows } = await sql<{ count: number; exists: boolean }>`
    select count(*)::int as count, coalesce(bool_or(key = ${key}), false) as exists
    from schedules where owner = ${owner}`.execute(trx);
  return rows[0]!;
}

/**
 * Inserts or replaces a schedule. A replaced schedule keeps its next occurrence while its
 * cron and zone stay and it runs; otherwise it runs from `nextRunAt` (null while paused).
 */
export async function upsertSchedule(db: Executor, s: NewSchedule): Promise<ScheduleRow> {
  const { rows } = await sql<ScheduleRow>`
    insert into schedules as s (owner, key, cron, timezone, kind, input, missed, overlap, paused,
                                priority, labels, retry, ttl_ms, concurrency_key, next_run_at)
    values (${s.owner}, ${s.key}, ${s.cron}, ${s.timezone}, ${s.kind}, ${json(s.input)},
            ${s.missed}, ${s.overlap}, coalesce(${s.paused}::boolean, false), ${s.priority}::int,
            ${jsonOrNull(s.labels)}::jsonb, ${jsonOrNull(s.retry)}::jsonb, ${s.ttlMs}::int, ${s.concurrencyKey},
            case when coalesce(${s.paused}::boolean, false) then null
                 else ${s.nextRunAt}::timestamptz end)
    on conflict (owner, key) do update set
      cron = excluded.cron, timezone = excluded.timezone, kind = excluded.kind,
      input = excluded.input, missed = excluded.missed, overlap = excluded.overlap,
      paused = coalesce(${s.paused}::boolean, s.paused),
      priority = excluded.priority, labels = excluded.labels, retry = excluded.retry,
      ttl_ms = excluded.ttl_ms, concurrency_key = excluded.concurrency_key,
      next_run_at = case
        when coalesce(${s.paused}::boolean, s.paused) then null
        when s.next_run_at is not null and s.cron = excluded.cron
             and s.timezone = excluded.timezone then s.next_run_at
        else ${s.nextRunAt}::timestamptz end,
      updated_at = now()
    returning s.*, ${notify} as notified`.execute(db);
  return withoutNotified(rows[0]!);
}

export async function findSchedule(
  db: Executor,
  owner: string,
  key: string,
): Promise<ScheduleRow | undefined> {
  return db
    .selectFrom('schedules')
    .selectAll()
    .where('owner', '=', owner)
    .where('key', '=', key)
    .executeTakeFirst();
}

/** The owner's schedules by key, after `after`; one more than `limit` tells of a next page. */
export function listSchedules(
  db: Executor,
  owner: string,
  after: string | null,
  limit: number,
): Promise<ScheduleRow[]> {
  let query = db.selectFrom('schedules').selectAll().where('owner', '=', owner);
  if (after !== null) query = query.where('key', '>', after);
  return query.orderBy('key').limit(limit).execute();
}

/** @returns whether there was such a schedule */
export async function deleteSchedule(db: Executor, owner: string, key: string): Promise<boolean> {
  const { rows } = await sql<{ key: string }>`
    delete from schedules where owner = ${owner} and key = ${key}
    returning key, ${notify} as notified`.execute(db);
  return rows.length > 0;
}

/** Pauses (no next occurrence) or resumes (from `nextRunAt`) a schedule. */
export async function setPaused(
  db: Executor,
  owner: string,
  key: string,
  paused: boolean,
  nextRunAt: Date | null,
): Promise<ScheduleRow | undefined> {
  const { rows } = await sql<ScheduleRow>`
    update schedules s set paused = ${paused},
      next_run_at = case when ${paused} then null
                         when s.paused then ${nextRunAt}::timestamptz else s.next_run_at end,
      updated_at = now()
    where owner = ${owner} and key = ${key}
    returning s.*, ${notify} as notified`.execute(db);
  return rows[0] && withoutNotified(rows[0]);
}

/** A due schedule as the scheduler takes it: locked, with whether its last task is active. */
export interface DueSchedule extends ScheduleRow {
  busy: boolean;
}

/**
 * Locks up to `limit` schedules due at `now` of the kinds this process runs, the earliest
 * first, skipping those another process is firing; each with whether its last task is still
 * active (not terminal, not expired). Served by `schedules_due`.
 */
export async function lockDue(
  trx: Executor,
  now: Date,
  kinds: readonly string[],
  limit: number,
): Promise<DueSchedule[]> {
  const { rows } = await sql<DueSchedule>`${prepared}
    select s.*, exists (
      select 1 from tasks t
      where t.id = s.last_task_id and t.status in ('working', 'input_required')
        and t.expires_at > now()
    ) as busy
    from schedules s
    where s.next_run_at <= ${now}::timestamptz and s.kind = any(${kinds}::text[])
    order by s.next_run_at
    limit ${limit}::int
    for update of s skip locked`.execute(trx);
  return rows;
}

/** Moves a locked schedule on to `nextRunAt`, with the last task it started, if it did. */
export async function advance(
  trx: Executor,
  s: Pick<ScheduleRow, 'owner' | 'key'>,
  nextRunAt: Date | null,
  started: { at: Date; taskId: string } | null,
): Promise<void> {
  await sql`${prepared}
    update schedules set next_run_at = ${nextRunAt}::timestamptz,
      last_run_at = coalesce(${started?.at ?? null}::timestamptz, last_run_at),
      last_task_id = coalesce(${started?.taskId ?? null}::uuid, last_task_id)
    where owner = ${s.owner} and key = ${s.key}
    returning ${notify} as notified`.execute(trx);
}

/** Records a task started out of turn (`triggerSchedule`) as the schedule's last. */
export async function recordTriggered(
  trx: Executor,
  s: Pick<ScheduleRow, 'owner' | 'key'>,
  at: Date,
  taskId: string,
): Promise<void> {
  await sql`
    update schedules set last_run_at = ${at}::timestamptz, last_task_id = ${taskId}::uuid
    where owner = ${s.owner} and key = ${s.key}
    returning ${notify} as notified`.execute(trx);
}

/** Locks one schedule for a change that reads it first (`triggerSchedule`). */
export function lockSchedule(
  trx: Executor,
  owner: string,
  key: string,
): Promise<ScheduleRow | undefined> {
  return trx
    .selectFrom('schedules')
    .selectAll()
    .where('owner', '=', owner)
    .where('key', '=', key)
    .forUpdate()
    .executeTakeFirst();
}

/** The earliest occurrence of a running schedule of the kinds this process runs, if any. */
export async function earliest(db: Executor, kinds: readonly string[]): Promise<Date | null> {
  const { rows } = await sql<{ at: Date }>`${prepared}
    select next_run_at as at from schedules
    where next_run_at is not null and kind = any(${kinds}::text[])
    order by next_run_at limit 1`.execute(db);
  return rows[0]?.at ?? null;
}

function withoutNotified(row: ScheduleRow): ScheduleRow {
  const { notified: _n, ...rest } = row as ScheduleRow & { notified?: unknown };
  return rest as ScheduleRow;
}
