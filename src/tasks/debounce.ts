import { ServiceError } from '../errors.js';
import type { StartRequest } from './requests.js';

/**
 * DESIGN §17 debounce: a burst of starts with one key makes one task, which runs the last
 * start's input once the starts pause for `delayMs` (or once `maxDelayMs` has passed since
 * the first). The burst's rules in the store are in `sql/debounce.ts`.
 */

/** A start's debounce, checked. */
export interface Debounce {
  key: string;
  /** The task runs this long after the burst's latest start... */
  delayMs: number;
  /** ...but no later than this long after its first start (null: no bound but delayMs). */
  maxDelayMs: number | null;
  /**
   * TASK_MAX_TTL_MS: a burst's task never lives longer than this from its first start, and
   * runs at the latest `delayMs` before that, however long its starts keep coming.
   */
  maxTtlMs: number;
}

/** The longest `delayMs` and `maxDelayMs`: one day, as §14's backoff cap. */
export const MAX_DEBOUNCE_DELAY_MS = 86_400_000;

const DEBOUNCE_KEY = /^[\x20-\x7e]{1,128}$/;

function refuse(message: string): never {
  throw new ServiceError('BAD_USER_INPUT', message);
}

function delayIn(value: unknown, field: string, min: number, from = String(min)): number {
  if (
    typeof value !== 'number' ||
    !Number.isInteger(value) ||
    value < min ||
    value > MAX_DEBOUNCE_DELAY_MS
  )
    refuse(`${field} must be an integer from ${from} to ${MAX_DEBOUNCE_DELAY_MS}.`);
  return value;
}

/**
 * Checks a start request's `debounce`, and the fields it cannot be combined with: the burst
 * is the task's identity (not an `idempotencyKey`) and decides when it runs (not `runAt` or
 * `delayMs`).
 * @param ttlMs the retention the task gets: its due time may not fall after its expiry (§14)
 * @param maxTtlMs the longest retention there is (TASK_MAX_TTL_MS), which no burst outlives
 * @returns null for a start without one
 * @throws ServiceError BAD_USER_INPUT naming the field at fault and its range
 */
export function checkDebounce(
  request: StartRequest,
  ttlMs: number,
  maxTtlMs: number,
): Debounce | null {
  const debounce: unknown = request.debounce;
  if (debounce === undefined || debounce === null) return null;
  if (typeof debounce !== 'object' || Array.isArray(debounce))
    refuse('debounce must be an object with key and delayMs.');
  if (request.idempotencyKey != null)
    refuse(
      'idempotencyKey cannot be combined with debounce: a start with the same debounce key already answers the waiting task.',
    );
  if (request.runAt != null || request.delayMs != null)
    refuse(
      `${request.runAt != null ? 'runAt' : 'delayMs'} cannot be combined with debounce: debounce.delayMs says when the task runs.`,
    );
  const { key, delayMs, maxDelayMs } = debounce as Record<string, unknown>;
  if (typeof key !== 'string' || !DEBOUNCE_KEY.test(key))
    refuse('debounce.key must be 1 to 128 printable ASCII characters.');
  const delay = delayIn(delayMs, 'debounce.delayMs', 0);
  if (delay > ttlMs)
    refuse(
      `debounce.delayMs (${delay}) must not exceed the task's ttlMs (${ttlMs}): the task would expire before it runs; give a longer ttlMs or a shorter delay.`,
    );
  const max =
    maxDelayMs == null
      ? null
      : delayIn(maxDelayMs, 'debounce.maxDelayMs', delay, `debounce.delayMs (${delay})`);
  return { key, delayMs: delay, maxDelayMs: max, maxTtlMs };
}
