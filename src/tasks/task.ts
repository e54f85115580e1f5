import type { TaskRow } from '../db/types.js';
import { outstandingQuestions } from './awaiting.js';
import { type HoldReason, holdReasonOf, type RateLimit, rateLimitOf } from './flow-control.js';
import type { InputRequest, TaskFailure, TaskStatus } from './status.js';

export type { InputRequest, TaskFailure } from './status.js';

/** A task as the faces see it: the handle plus its payloads. Payload visibility is the faces' job. */
export interface Task {
  id: string;
  owner: string;
  kind: string;
  status: TaskStatus;
  statusMessage: string | null;
  progress: number | null;
  createdAt: Date;
  lastUpdatedAt: Date;
  ttlMs: number;
  expiresAt: Date;
  pollIntervalMs: number;
  version: number;
  input: unknown;
  result: unknown;
  error: TaskFailure | null;
  /** The first outstanding question while INPUT_REQUIRED (the one the single-question faces show). */
  inputRequest: InputRequest | null;
  /** Every outstanding question while INPUT_REQUIRED, in the order asked; empty otherwise. */
  inputRequests: InputRequest[];
  /** Runs started so far (0 before the first). */
  attempt: number;
  maxAttempts: number;
  /** Set while the task waits for its time or its next attempt. */
  runAt: Date | null;
  priority: number;
  /** As given at start (null: the owner is the key). */
  concurrencyKey: string | null;
  /** The limit this task is held to, if any. */
  concurrencyLimit: number | null;
  /** As given at start (null: the owner is the key), DESIGN §17. */
  rateLimitKey: string | null;
  /** The limit of first starts in a sliding period this task is held to, if any. */
  rateLimit: RateLimit | null;
  /** Why it waits to be claimed, while it does: its concurrency key, rate limit key, or time. */
  heldBecause: HoldReason | null;
  /** The error of the last failed attempt, kept while retrying. */
  lastError: TaskFailure | null;
  /** Set at start, never changed (DESIGN §15); `{}` when none were given. */
  labels: Record<string, string>;
  /** The task this one runs again (retryTask), if any. */
  retryOf: string | null;
  /** The schedule that started it (DESIGN §17), if any. */
  scheduleKey: string | null;
  /** The task whose handler started this one (`ctx.startChild`, DESIGN §16), if any. */
  parentId: string | null;
}

/** The longest a poller is asked to wait, however long a person takes. */
const MAX_POLL_INTERVAL_MS = 60_000;

/**
 * How long a poller should wait: the kind's interval while working; while a person is being
 * asked, a tenth of the time waited so far, at least five times the kind's interval and at
 * most a minute — people answer in minutes, not milliseconds.
 */
export function pollIntervalFor(
  row: Pick<TaskRow, 'status' | 'poll_interval_ms' | 'last_updated_at'>,
  now = Date.now(),
): number {
  if (row.status !== 'input_required') return row.poll_interval_ms;
  const waited = now - row.last_updated_at.getTime();
  return Math.round(
    Math.min(MAX_POLL_INTERVAL_MS, Math.max(row.poll_interval_ms * 5, waited / 10)),
  );
}

/**
 * The due time of a task that waits to be claimed after a delay, a backoff or a timed wait,
 * else null (also for a wait with no wake-up instant, DESIGN §16).
 */
function waitingSince(
  row: Pick<TaskRow, 'status' | 'worker_id' | 'run_at' | 'created_at' | 'hold'>,
): Date | null {
  return row.status === 'working' &&
    row.worker_id === null &&
    row.hold !== 'wait' &&
    row.run_at.getTime() > row.created_at.getTime()
    ? row.run_at
    : null;
}

export function toTask(row: TaskRow, now = Date.now()): Task {
  return {
    id: row.id,
    owner: row.owner,
    kind: row.kind,
    status: row.status,
    statusMessage: row.status_message,
    progress: row.progress,
    createdAt: row.created_at,
    lastUpdatedAt: row.last_updated_at,
    ttlMs: row.ttl_ms,
    expiresAt: row.expires_at,
    pollIntervalMs: pollIntervalFor(row, now),
    version: row.version,
    input: row.input,
    result: row.result,
    error: row.error,
    inputRequest: row.input_request,
    inputRequests: outstandingQuestions(row),
    attempt: row.attempt,
    maxAttempts: row.max_attempts,
    runAt: waitingSince(row),
    priority: row.priority,
    concurrencyKey: row.concurrency_key,
    concurrencyLimit: row.concurrency_limit,
    rateLimitKey: row.rate_limit_key ?? null,
    rateLimit: rateLimitOf(row),
    heldBecause: holdReasonOf(row, now),
    lastError: row.last_error,
    labels: row.labels ?? {},
    retryOf: row.retry_of ?? null,
    scheduleKey: row.schedule_key ?? null,
    parentId: row.parent_id ?? null,
  };
}

/** Whether `owner` (null: an admin) may see `row` now: what `findVisibleTask` would return. */
export function visible(
  row: TaskRow | undefined,
  owner: string | null,
  now = Date.now(),
): row is TaskRow {
  return (
    row !== undefined && row.expires_at.getTime() > now && (owner === null || row.owner === owner)
  );
}
