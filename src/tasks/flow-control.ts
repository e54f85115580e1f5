import type { TaskRow } from '../db/types.js';

/**
 * Flow control (DESIGN §17) as the domain states it; the claim that enforces it is SQL
 * (`taskhandle_claim_tasks`, migrations/0012_flow_control.sql).
 */

/** At most `limit` first starts of a kind and key in any sliding `periodMs`. */
export interface RateLimit {
  /** 1..1000 */
  limit: number;
  /** 1..86 400 000 (a day) */
  periodMs: number;
}

export const RATE_LIMIT_MAX = 1_000;
export const RATE_PERIOD_MAX_MS = 86_400_000;

const isIntIn = (value: unknown, min: number, max: number) =>
  typeof value === 'number' && Number.isInteger(value) && value >= min && value <= max;

/** What is wrong with the rate limit `field`, naming it and the range, or undefined. */
export function rateLimitProblem(value: unknown, field: string): string | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    return `${field} must be an object { limit, periodMs }`;
  const { limit, periodMs } = value as Record<string, unknown>;
  if (!isIntIn(limit, 1, RATE_LIMIT_MAX))
    return `${field}.limit must be an integer from 1 to ${RATE_LIMIT_MAX}`;
  if (!isIntIn(periodMs, 1, RATE_PERIOD_MAX_MS))
    return `${field}.periodMs must be an integer from 1 to ${RATE_PERIOD_MAX_MS}`;
  return undefined;
}

/** The rate limit a stored row is held to, if any. */
export function rateLimitOf(row: Pick<TaskRow, 'rate_limit' | 'rate_period_ms'>): RateLimit | null {
  return row.rate_limit == null || row.rate_period_ms == null
    ? null
    : { limit: row.rate_limit, periodMs: row.rate_period_ms };
}

/**
 * Why a task that could otherwise run waits to be claimed: `concurrency` (its concurrency
 * key runs its limit), `rate_limit` (its rate limit key started its limit in the period), or
 * `time` (a delayed start, a backoff or a timed wait, until its `runAt`).
 */
export type HoldReason = 'concurrency' | 'rate_limit' | 'time';

/** The hold reason of a stored row at `now`, if it is held. */
export function holdReasonOf(
  row: Pick<TaskRow, 'status' | 'hold' | 'run_at'>,
  now: number,
): HoldReason | null {
  if (row.status !== 'working') return null;
  if (row.hold === 'key') return 'concurrency';
  if (row.hold === 'rate') return 'rate_limit';
  // The claim lets a due task go without announcing it: past its time it is not held.
  if (row.hold === 'time' && row.run_at.getTime() > now) return 'time';
  return null;
}
