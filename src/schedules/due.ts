import type { MissedPolicy } from './schedule.js';
import type { Timetable } from './timetable.js';

/**
 * An occurrence not started this long after its instant was missed: no process was running
 * over it (or none could reach the database). A running process starts one within a second.
 */
export const MISSED_AFTER_MS = 60_000;

/** Most occurrences `missed: ALL` starts after a time with no process running. */
export const MAX_MISSED_RUNS = 100;

/** What a due schedule does now: the occurrences it starts, oldest first, and its next one. */
export interface DuePlan {
  /** The occurrences to start, oldest first (epoch ms). */
  start: number[];
  /** Whether occurrences due now were let go (missed, and not started by the policy). */
  skipped: boolean;
  /** The first occurrence after now; null when the cron never occurs again. */
  next: number | null;
}

/**
 * What a schedule whose occurrence `due` has come (`due` ≤ `now`) starts. Occurrences only
 * late (the oldest due less than MISSED_AFTER_MS ago) all start. Once the oldest was missed,
 * `missed` decides for every occurrence due now: `skip` none, `once` the latest, `all` every
 * one, oldest first, at most MAX_MISSED_RUNS (those after the first hundred are let go).
 */
export function planDue(
  timetable: Timetable,
  due: number,
  now: number,
  missed: MissedPolicy,
): DuePlan {
  const wasMissed = due < now - MISSED_AFTER_MS;
  if (!wasMissed || missed === 'all') {
    const start: number[] = [];
    let at: number | null = due;
    while (at !== null && at <= now && start.length < MAX_MISSED_RUNS) {
      start.push(at);
      at = timetable.after(at);
    }
    // Past the hundredth, the rest are let go without walking them one by one.
    const skipped = at !== null && at <= now;
    return { start, skipped, next: skipped ? timetable.after(now) : at };
  }
  const next = timetable.after(now);
  if (missed === 'skip') return { start: [], skipped: true, next };
  const latest = timetable.atOrBefore(now) ?? due;
  return { start: [latest], skipped: latest !== due, next };
}
