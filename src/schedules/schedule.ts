import type { ScheduleRow } from '../db/types.js';
import { ServiceError } from '../errors.js';
import type { StartRequest } from '../tasks/requests.js';

/** What a schedule is (DESIGN §17), as the faces hand it in and get it back. */

/** What runs after a time no process could start a schedule's occurrences in. */
export type MissedPolicy = 'skip' | 'once' | 'all';
/** Whether an occurrence starts while the schedule's last task is still active. */
export type OverlapPolicy = 'allow' | 'skip';

/** `upsertSchedule`'s input; omitted fields take their defaults, `paused` keeps its state. */
export interface ScheduleRequest {
  key: string;
  cron: string;
  /** IANA name. @default 'UTC' */
  timezone?: string | null;
  kind: string;
  input?: unknown;
  /** @default 'skip' */
  missed?: MissedPolicy | null;
  /** @default 'allow' */
  overlap?: OverlapPolicy | null;
  /** @default the schedule's current state (false for a new one) */
  paused?: boolean | null;
  /** What each occurrence's task is started with (DESIGN §14); omitted: the kind's. */
  priority?: number | null;
  labels?: unknown;
  retry?: StartRequest['retry'];
  ttlMs?: number | null;
  concurrencyKey?: string | null;
}

/** A schedule as the faces show it; `input` is its owner's to read (tasks/visibility.ts). */
export interface Schedule {
  owner: string;
  key: string;
  cron: string;
  timezone: string;
  kind: string;
  input: unknown;
  missed: MissedPolicy;
  overlap: OverlapPolicy;
  paused: boolean;
  priority: number | null;
  labels: Record<string, string> | null;
  retry: Record<string, number | null> | null;
  ttlMs: number | null;
  concurrencyKey: string | null;
  /** The occurrence due next; null while paused. */
  nextRunAt: Date | null;
  /** The occurrence (or the trigger) of the last task started. */
  lastRunAt: Date | null;
  lastTaskId: string | null;
  createdAt: Date;
  updatedAt: Date;
}

/** A page of schedules, by key. */
export interface SchedulePage {
  schedules: Schedule[];
  hasNextPage: boolean;
  /** The opaque cursor of the page's last schedule, for `after`; null on an empty page. */
  endCursor: string | null;
}

/** At most this many schedules an owner (DESIGN §17). */
export const MAX_SCHEDULES_PER_OWNER = 1_000;

const KEY = /^[\x20-\x7e]{1,128}$/;

/** Whether `key` has the shape of a schedule key (says nothing of whether one exists). */
export function isScheduleKey(key: unknown): key is string {
  return typeof key === 'string' && KEY.test(key);
}

/** @throws ServiceError BAD_USER_INPUT for a key that is not 1..128 printable characters */
export function checkKey(key: unknown): string {
  if (!isScheduleKey(key))
    throw new ServiceError(
      'BAD_USER_INPUT',
      'A schedule key is 1 to 128 printable ASCII characters.',
    );
  return key;
}

/** A position in an owner's schedules, by key: opaque to clients, the same on every face. */
export function scheduleCursor(schedule: Pick<Schedule, 'key'>): string {
  return Buffer.from(`s|${schedule.key}`).toString('base64url');
}

/**
 * The key a cursor stands after.
 * @throws ServiceError BAD_USER_INPUT for anything `scheduleCursor` did not write
 */
export function scheduleAfter(cursor: string): string {
  const text = Buffer.from(String(cursor), 'base64url').toString();
  if (!text.startsWith('s|') || text.length < 3)
    throw new ServiceError('BAD_USER_INPUT', 'Malformed cursor.');
  return text.slice(2);
}

export function toSchedule(row: ScheduleRow): Schedule {
  return {
    owner: row.owner,
    key: row.key,
    cron: row.cron,
    timezone: row.timezone,
    kind: row.kind,
    input: row.input,
    missed: row.missed,
    overlap: row.overlap,
    paused: row.paused,
    priority: row.priority,
    labels: row.labels,
    retry: row.retry,
    ttlMs: row.ttl_ms,
    concurrencyKey: row.concurrency_key,
    nextRunAt: row.next_run_at,
    lastRunAt: row.last_run_at,
    lastTaskId: row.last_task_id,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

/**
 * The start request of one of the schedule's tasks: an occurrence's carries the idempotency
 * key `schedule:{key}:{occurrence ISO}`, in its owner's key space, so that an occurrence
 * started twice is one task.
 */
export function startRequestOf(
  schedule: Pick<
    ScheduleRow,
    'key' | 'kind' | 'input' | 'priority' | 'labels' | 'retry' | 'ttl_ms' | 'concurrency_key'
  >,
  occurrence: number | null,
): StartRequest {
  return {
    kind: schedule.kind,
    input: schedule.input,
    ttlMs: schedule.ttl_ms,
    idempotencyKey:
      occurrence === null ? null : `schedule:${schedule.key}:${new Date(occurrence).toISOString()}`,
    priority: schedule.priority,
    concurrencyKey: schedule.concurrency_key,
    retry: schedule.retry,
    labels: schedule.labels ?? undefined,
  };
}
