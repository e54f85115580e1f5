import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Clock } from '../../src/schedules/clock.js';
import { Scheduler } from '../../src/schedules/scheduler.js';
import { ScheduleService } from '../../src/schedules/service.js';
import { eventually, startTestApp, type TestApp } from '../helpers/app.js';
import { hold } from '../helpers/kinds.js';
import { ManualClock } from '../helpers/manual-clock.js';

/**
 * Firing on one process and one database (PGlite, or Postgres with DATABASE_URL), on a clock
 * the test moves: each occurrence starts one task, however many schedulers run and however
 * often they stop; `missed`, `overlap`, pause and trigger. Every wait is for the schedule's
 * next occurrence to move on, which its firing commits with the tasks it starts.
 */

const alice = { id: 'alice', admin: false };
const T0 = Date.parse('2026-05-04T10:00:30Z');
const minute = (n: number) => Date.parse('2026-05-04T10:00:00Z') + n * 60_000;
const iso = (ms: number) => new Date(ms).toISOString();

describe('firing schedules', () => {
  let t: TestApp;
  let clock: ManualClock;
  const engines: Scheduler[] = [];

  /** A scheduler as a process starts one; stopped after the test. */
  function engine(on: Clock = clock): Scheduler {
    const { db, tasks, events, log } = t.app;
    const scheduler = new Scheduler({ db: db.kysely, tasks, events, log, clock: on });
    engines.push(scheduler);
    scheduler.start();
    return scheduler;
  }

  async function tasksOf(key: string) {
    return t.app.db.kysely
      .selectFrom('tasks')
      .select(['id', 'owner', 'idempotency_key', 'schedule_key', 'status'])
      .where('schedule_key', '=', key)
      .orderBy('idempotency_key')
      .execute();
  }

  /** Resolves once schedule `key` has moved on to `next`. */
  const movedOn = (key: string, next: number | null) =>
    eventually(async () => {
      const schedule = await t.app.schedules.get(alice, key);
      return (schedule?.nextRunAt?.getTime() ?? null) === next ? schedule! : undefined;
    });

  const save = (key: string, more: Record<string, unknown> = {}) =>
    t.app.schedules.upsert(alice, {
      key,
      cron: '* * * * *',
      kind: 'hold',
      input: {},
      ...more,
    });

  beforeAll(async () => {
    clock = new ManualClock(T0);
    t = await startTestApp({ kinds: [hold], scheduleClock: clock });
    // The tests run their own schedulers, started and stopped as processes would be.
    await t.app.scheduler?.stop();
  });
  afterEach(async () => {
    await Promise.all(engines.splice(0).map((e) => e.stop()));
  });
  afterAll(() => t?.stop());

  it('starts one task an occurrence, keyed by its instant, however many schedulers race', async () => {
    const saved = await save('every-minute', { labels: { team: 'ops' }, priority: 7 });
    expect(saved.nextRunAt).toEqual(new Date(minute(1)));
    engine();
    engine();
    engine();
    for (const n of [1, 2, 3]) {
      clock.set(minute(n) + 200);
      await movedOn('every-minute', minute(n + 1));
    }
    const started = await tasksOf('every-minute');
    expect(started.map((r) => r.idempotency_key)).toEqual(
      [1, 2, 3].map((n) => `schedule:every-minute:${iso(minute(n))}`),
    );
    expect(started.every((r) => r.owner === 'alice' && r.schedule_key === 'every-minute')).toBe(
      true,
    );
    const [first] = await t.app.tasks
      .list(alice, { filter: { labels: { team: 'ops' } } })
      .then((page) => page.tasks);
    expect(first).toMatchObject({ scheduleKey: 'every-minute', priority: 7 });
    const schedule = await t.app.schedules.get(alice, 'every-minute');
    expect(schedule).toMatchObject({ lastRunAt: new Date(minute(3)), lastTaskId: first!.id });
    await t.app.schedules.remove(alice, 'every-minute');
  });

  it('after a time with no scheduler, starts what `missed` says, on the next start', async () => {
    clock.set(minute(10) + 500);
    await save('skip', { missed: 'skip' });
    await save('once', { missed: 'once' });
    await save('all', { missed: 'all' });
    const first = engine();
    clock.set(minute(11) + 100);
    for (const key of ['skip', 'once', 'all']) await movedOn(key, minute(12));
    await first.stop();
    // Nobody runs from 10:11 until 10:20:30: the nine occurrences of 10:12 … 10:20 fall in it.
    clock.set(minute(20) + 30_000);
    engine();
    for (const key of ['skip', 'once', 'all']) await movedOn(key, minute(21));
    const keys = async (key: string) =>
      (await tasksOf(key)).map((r) => r.idempotency_key!.slice(`schedule:${key}:`.length));
    expect(await keys('skip')).toEqual([iso(minute(11))]);
    expect(await keys('once')).toEqual([iso(minute(11)), iso(minute(20))]);
    expect(await keys('all')).toEqual(
      [11, 12, 13, 14, 15, 16, 17, 18, 19, 20].map((n) => iso(minute(n))),
    );
    for (const key of ['skip', 'once', 'all']) await t.app.schedules.remove(alice, key);
  });

  it('starts an occurrence that is only late, whatever `missed` says', async () => {
    clock.set(minute(30) + 100);
    await save('late', { missed: 'skip' });
    // Due at 10:31, first seen 40 s later: late, not missed.
    clock.set(minute(31) + 40_000);
    engine();
    await movedOn('late', minute(32));
    expect((await tasksOf('late')).map((r) => r.idempotency_key)).toEqual([
      `schedule:late:${iso(minute(31))}`,
    ]);
    await t.app.schedules.remove(alice, 'late');
  });

  it('starts at most a hundred missed occurrences, the oldest first', async () => {
    clock.set(minute(40) + 100);
    await save('backlog', { missed: 'all' });
    clock.set(minute(40) + 200 * 60_000 + 100); // 200 occurrences, 10:41 … 14:00
    engine();
    const next = minute(40) + 201 * 60_000;
    await movedOn('backlog', next);
    const started = await tasksOf('backlog');
    expect(started).toHaveLength(100);
    expect(started[0]!.idempotency_key).toBe(`schedule:backlog:${iso(minute(41))}`);
    expect(started[99]!.idempotency_key).toBe(`schedule:backlog:${iso(minute(140))}`);
    await t.app.schedules.remove(alice, 'backlog');
  });

  it('with overlap SKIP, starts nothing while the last task is active', async () => {
    const base = clock.now() - (clock.now() % 60_000);
    const at = (n: number) => base + n * 60_000;
    await save('single', { overlap: 'skip' });
    engine();
    clock.set(at(1) + 100);
    await movedOn('single', at(2));
    clock.set(at(2) + 100);
    await movedOn('single', at(3));
    const [running] = await tasksOf('single');
    expect(await tasksOf('single')).toHaveLength(1);
    await t.app.tasks.cancel(alice, running!.id);
    clock.set(at(3) + 100);
    await movedOn('single', at(4));
    expect((await tasksOf('single')).map((r) => r.idempotency_key)).toEqual([
      `schedule:single:${iso(at(1))}`,
      `schedule:single:${iso(at(3))}`,
    ]);
    await t.app.schedules.remove(alice, 'single');
  });

  it('pauses, resumes from the next occurrence, and triggers out of turn', async () => {
    const base = clock.now() - (clock.now() % 60_000);
    const at = (n: number) => base + n * 60_000;
    await save('paused', { paused: true });
    engine();
    const paused = await t.app.schedules.get(alice, 'paused');
    expect(paused).toMatchObject({ paused: true, nextRunAt: null });
    clock.set(at(2) + 100);
    const triggered = await t.app.schedules.trigger(alice, 'paused');
    expect(triggered).toMatchObject({ scheduleKey: 'paused', kind: 'hold' });
    expect(await t.app.schedules.get(alice, 'paused')).toMatchObject({
      lastTaskId: triggered.id,
      lastRunAt: new Date(at(2) + 100),
      nextRunAt: null,
    });
    const resumed = await t.app.schedules.pause(alice, 'paused', false);
    expect(resumed.nextRunAt).toEqual(new Date(at(3)));
    clock.set(at(3) + 100);
    await movedOn('paused', at(4));
    expect(await tasksOf('paused')).toHaveLength(2);
    await t.app.schedules.remove(alice, 'paused');
  });

  it('runs a skipped wall-clock time once, at the end of the gap, and a repeated one once', async () => {
    const berlin = new ManualClock(Date.parse('2026-03-28T12:00:00Z'));
    const { db, tasks } = t.app;
    const saved = await new ScheduleService(db.kysely, tasks, berlin).upsert(alice, {
      key: 'berlin',
      cron: '30 2 * * *',
      timezone: 'europe/berlin',
      kind: 'hold',
      // Between the two DST changes nothing runs; the latest occurrence then is the one here.
      missed: 'once',
    });
    expect(saved).toMatchObject({
      timezone: 'Europe/Berlin',
      nextRunAt: new Date('2026-03-29T01:00:00Z'),
    });
    engine(berlin);
    berlin.set('2026-03-29T01:00:00.100Z'); // 03:00 CEST: 02:30 did not exist
    await movedOn('berlin', Date.parse('2026-03-30T00:30:00Z'));
    berlin.set('2026-10-25T00:30:00.100Z'); // 02:30 CEST, the first of two
    await eventually(async () => ((await tasksOf('berlin')).length === 2 ? true : undefined));
    const schedule = await movedOn('berlin', Date.parse('2026-10-26T01:30:00Z'));
    expect(schedule.lastRunAt).toEqual(new Date('2026-10-25T00:30:00Z'));
  });
});
