import type { Executor } from '../db/types.js';
import { notFound, ServiceError } from '../errors.js';
import { type Actor, DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, ownerActor } from '../tasks/requests.js';
import type { TaskService } from '../tasks/service.js';
import type { Task } from '../tasks/task.js';
import { ownerFor } from '../tasks/visibility.js';
import { type Clock, systemClock } from './clock.js';
import {
  checkKey,
  MAX_SCHEDULES_PER_OWNER,
  type Schedule,
  type SchedulePage,
  type ScheduleRequest,
  scheduleAfter,
  scheduleCursor,
  startRequestOf,
  toSchedule,
} from './schedule.js';
import {
  countLocked,
  deleteSchedule,
  findSchedule,
  listSchedules,
  lockSchedule,
  recordTriggered,
  setPaused,
  upsertSchedule,
} from './store.js';
import { Timetable } from './timetable.js';

const MISSED = new Set(['skip', 'once', 'all']);
const OVERLAP = new Set(['allow', 'skip']);

/**
 * The schedule operations every face uses (DESIGN §17). A schedule belongs to its owner, as
 * its tasks do; an admin may name another owner (`owner`). Each operation passes the task
 * service's gate: its rate limit and its one audit line. Which scope each needs is in
 * tasks/scopes.ts, asked by the faces.
 */
export class ScheduleService {
  private readonly clock: Clock;

  constructor(
    private readonly db: Executor,
    private readonly tasks: TaskService,
    clock?: Clock,
  ) {
    this.clock = clock ?? systemClock;
  }

  /**
   * Creates or replaces the schedule `request.key` of the owner. Its tasks are checked as
   * `startTask` checks them (kind, input against the kind's schema, §14 fields, labels).
   * @throws ServiceError BAD_USER_INPUT naming the cron, zone or field at fault, or past
   *   MAX_SCHEDULES_PER_OWNER
   */
  upsert(actor: Actor, request: ScheduleRequest, owner?: string | null): Promise<Schedule> {
    return this.tasks.gate.around(
      actor,
      'upsertSchedule',
      null,
      async () => {
        const whose = this.ownerOf(actor, owner);
        const key = checkKey(request.key);
        const timetable = Timetable.of(request.cron, request.timezone ?? 'UTC');
        const missed = request.missed ?? 'skip';
        const overlap = request.overlap ?? 'allow';
        if (!MISSED.has(missed))
          throw new ServiceError('BAD_USER_INPUT', 'missed must be SKIP, ONCE or ALL.');
        if (!OVERLAP.has(overlap))
          throw new ServiceError('BAD_USER_INPUT', 'overlap must be ALLOW or SKIP.');
        if (request.paused != null && typeof request.paused !== 'boolean')
          throw new ServiceError('BAD_USER_INPUT', 'paused must be true or false.');
        const stored = {
          key,
          kind: request.kind,
          input: request.input ?? {},
          priority: request.priority ?? null,
          labels: (request.labels as Record<string, string> | null | undefined) ?? null,
          retry: request.retry ?? null,
          ttl_ms: request.ttlMs ?? null,
          concurrency_key: request.concurrencyKey ?? null,
        };
        // An occurrence's task as it will be started, checked now (the key as the longest).
        this.tasks.checkStart(ownerActor(whose), startRequestOf(stored, Date.UTC(2000, 0, 1)));
        const next = timetable.after(this.clock.now());
        return this.db.transaction().execute(async (trx) => {
          const { count, exists } = await countLocked(trx, whose, key);
          if (!exists && count >= MAX_SCHEDULES_PER_OWNER)
            throw new ServiceError(
              'BAD_USER_INPUT',
              `An owner has at most ${MAX_SCHEDULES_PER_OWNER} schedules; delete one first.`,
            );
          const row = await upsertSchedule(trx, {
            ...stored,
            owner: whose,
            cron: timetable.expression,
            timezone: timetable.timezone,
            missed,
            overlap,
            paused: request.paused ?? null,
            ttlMs: stored.ttl_ms,
            concurrencyKey: stored.concurrency_key,
            nextRunAt: next === null ? null : new Date(next),
          });
          return toSchedule(row);
        });
      },
      (schedule) => [null, 'saved', { schedule: schedule.key, owner: schedule.owner }],
    );
  }

  /** `null`: no such schedule of the owner. */
  get(actor: Actor, key: string, owner?: string | null): Promise<Schedule | null> {
    return this.tasks.gate.around(
      actor,
      'schedule',
      null,
      async () => {
        const row = await findSchedule(this.db, this.ownerOf(actor, owner), checkKey(key));
        return row ? toSchedule(row) : null;
      },
      (schedule) => [null, schedule ? 'ok' : 'not_found', { schedule: key }],
    );
  }

  /** The owner's schedules by key, `first` (1..100, default 20) after the cursor `after`. */
  list(
    actor: Actor,
    request: { first?: number | null; after?: string | null; owner?: string | null } = {},
  ): Promise<SchedulePage> {
    return this.tasks.gate.around(
      actor,
      'schedules',
      null,
      async () => {
        const first = request.first ?? DEFAULT_PAGE_SIZE;
        if (!Number.isInteger(first) || first < 1 || first > MAX_PAGE_SIZE)
          throw new ServiceError('BAD_USER_INPUT', `first must be between 1 and ${MAX_PAGE_SIZE}.`);
        const after = request.after == null ? null : scheduleAfter(request.after);
        const rows = await listSchedules(
          this.db,
          this.ownerOf(actor, request.owner),
          after,
          first + 1,
        );
        const page = rows.slice(0, first).map(toSchedule);
        return {
          schedules: page,
          hasNextPage: rows.length > first,
          endCursor: page.length ? scheduleCursor(page.at(-1)!) : null,
        };
      },
      (page) => [null, `ok:${page.schedules.length}`],
    );
  }

  /** Deletes the schedule; the tasks it started stay. @returns whether it existed */
  remove(actor: Actor, key: string, owner?: string | null): Promise<boolean> {
    return this.tasks.gate.around(
      actor,
      'deleteSchedule',
      null,
      () => deleteSchedule(this.db, this.ownerOf(actor, owner), checkKey(key)),
      (deleted) => [null, deleted ? 'deleted' : 'not_found', { schedule: key }],
    );
  }

  /**
   * Pauses the schedule (no occurrence starts, `nextRunAt` null) or resumes it from the next
   * occurrence after now: what fell in the pause is not run.
   * @throws ServiceError NOT_FOUND
   */
  pause(actor: Actor, key: string, paused: boolean, owner?: string | null): Promise<Schedule> {
    return this.tasks.gate.around(
      actor,
      'pauseSchedule',
      null,
      async () => {
        const whose = this.ownerOf(actor, owner);
        const found = await findSchedule(this.db, whose, checkKey(key));
        if (!found) throw notFound('Schedule');
        const next = paused
          ? null
          : Timetable.of(found.cron, found.timezone).after(this.clock.now());
        const row = await setPaused(
          this.db,
          whose,
          key,
          paused,
          next === null ? null : new Date(next),
        );
        if (!row) throw notFound('Schedule');
        return toSchedule(row);
      },
      () => [null, paused ? 'paused' : 'resumed', { schedule: key }],
    );
  }

  /**
   * Starts the schedule's task now, out of turn (paused or not, whatever `overlap` says); it
   * becomes the schedule's last task. The next occurrence stays as it was.
   * @throws ServiceError NOT_FOUND
   */
  trigger(actor: Actor, key: string, owner?: string | null): Promise<Task> {
    return this.tasks.gate.around(
      actor,
      'triggerSchedule',
      null,
      () =>
        this.db.transaction().execute(async (trx) => {
          const whose = this.ownerOf(actor, owner);
          const row = await lockSchedule(trx, whose, checkKey(key));
          if (!row) throw notFound('Schedule');
          const { task } = await this.tasks.startWithin(
            trx,
            ownerActor(whose),
            startRequestOf(row, null),
            row.key,
          );
          await recordTriggered(trx, row, new Date(this.clock.now()), task.id);
          return task;
        }),
      (task) => [task.id, 'started', { schedule: key }],
    );
  }

  /**
   * The last task the schedule started, as `actor` may see it; null once it expired. A field
   * of a schedule the actor has read: no audit line or rate limit of its own.
   */
  lastTask(actor: Actor, schedule: Schedule): Promise<Task | null> {
    return schedule.lastTaskId
      ? this.tasks.related(actor, schedule.lastTaskId)
      : Promise.resolve(null);
  }

  private ownerOf(actor: Actor, owner: string | null | undefined): string {
    return ownerFor(actor, owner, 'see or schedule');
  }
}
