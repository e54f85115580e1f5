import type { Logger } from 'pino';
import type { Executor } from '../db/types.js';
import { coerceError, ServiceError } from '../errors.js';
import { ownerActor } from '../tasks/requests.js';
import type { TaskService } from '../tasks/service.js';
import { planDue } from './due.js';
import { startRequestOf } from './schedule.js';
import { advance, type DueSchedule, lockDue } from './store.js';
import { Timetable } from './timetable.js';

/** What firing reads and writes through. */
export interface FireContext {
  db: Executor;
  tasks: TaskService;
  log: Logger;
  /** The kinds this process runs: a schedule of another kind waits for a process that does. */
  kinds: readonly string[];
}

/**
 * Fires up to `limit` schedules due at `now` in one transaction: each is locked (skipping
 * those another process holds), its occurrences' tasks are inserted and its next occurrence
 * set, and the commit makes all of it true at once. A process that dies before the commit
 * started nothing and the occurrences stay due; two processes never lock one schedule, and
 * an occurrence's idempotency key would make a second start the same task anyway.
 * @returns how many schedules were locked (`limit`: more may be due)
 */
export async function fireDue(ctx: FireContext, now: number, limit: number): Promise<number> {
  return ctx.db.transaction().execute(async (trx) => {
    const due = await lockDue(trx, new Date(now), ctx.kinds, limit);
    for (const schedule of due) await fireOne(ctx, trx, schedule, now);
    return due.length;
  });
}

async function fireOne(
  ctx: FireContext,
  trx: Executor,
  schedule: DueSchedule,
  now: number,
): Promise<void> {
  const { log } = ctx;
  const where = { owner: schedule.owner, schedule: schedule.key };
  let timetable: Timetable;
  try {
    timetable = Timetable.of(schedule.cron, schedule.timezone);
  } catch (err) {
    // Saved when it was valid: only a change of the cron library could bring this here.
    log.error({ ...where, err: coerceError(err) }, 'schedule cron unreadable; it stops');
    return advance(trx, schedule, null, null);
  }
  const plan = planDue(timetable, schedule.next_run_at!.getTime(), now, schedule.missed);
  if (plan.skipped)
    log.warn(
      { ...where, from: schedule.next_run_at, missed: schedule.missed },
      'schedule occurrences missed while no process ran; let go',
    );
  let busy = schedule.busy;
  let started: { at: Date; taskId: string } | null = null;
  for (const occurrence of plan.start) {
    const at = new Date(occurrence);
    if (busy && schedule.overlap === 'skip') {
      log.info(
        { ...where, occurrence: at },
        'schedule occurrence skipped: its last task is active',
      );
      continue;
    }
    try {
      const { task, created } = await ctx.tasks.startWithin(
        trx,
        ownerActor(schedule.owner),
        startRequestOf(schedule, occurrence),
        schedule.key,
      );
      started = { at, taskId: task.id };
      busy = true;
      log.info({ ...where, occurrence: at, taskId: task.id, created }, 'schedule started a task');
    } catch (err) {
      // Refused before any statement ran (the kind's schema changed under its input): this
      // occurrence cannot start; the schedule goes on. Anything else rolls the whole back.
      if (!(err instanceof ServiceError) || err.code !== 'BAD_USER_INPUT') throw err;
      log.error({ ...where, occurrence: at, err }, 'schedule occurrence refused; let go');
    }
  }
  await advance(trx, schedule, plan.next === null ? null : new Date(plan.next), started);
}
