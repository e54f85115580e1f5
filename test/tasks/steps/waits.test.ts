import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, startTestApp, type TestApp } from '../../helpers/app.js';

/**
 * Durable sleeps (DESIGN §16) on one process with one slot (RUNNER_CONCURRENCY=1): a task
 * asleep holds no slot, no lease, no timer and no object; it wakes by the runner's one timer
 * for the earliest due task; cancel and expiry reach it at once.
 */

const ALICE = { id: 'alice', admin: false };

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ env: { RUNNER_CONCURRENCY: '1' } });
});
afterAll(() => t?.stop());

const stored = (id: string) =>
  t.app.db.kysely
    .selectFrom('tasks')
    .select(['status', 'hold', 'worker_id', 'attempt', 'run_at'])
    .where('id', '=', id)
    .executeTakeFirstOrThrow();

/** Resolves once the task is suspended on its sleep. */
const asleep = (id: string) =>
  eventually(async () => {
    const row = await stored(id);
    return row.hold === 'time' && row.worker_id === null && !t.app.runner?.holds(id)
      ? row
      : undefined;
  });

const finished = (id: string) =>
  eventually(async () => {
    const task = await t.app.tasks.get(ALICE, id);
    return task && task.status !== 'working' ? task : undefined;
  });

const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;

// A hundred tasks started, run and suspended: tens of seconds on a loaded machine.
describe('a durable sleep', { timeout: 90_000 }, () => {
  it('holds no slot: with one slot, other tasks run to the end while it sleeps for an hour', async () => {
    const { task: sleeper } = await t.app.tasks.start(ALICE, {
      kind: 'pipeline',
      input: { stages: 2, sleepMs: 3_600_000 },
    });
    const row = await asleep(sleeper.id);
    expect(row.status).toBe('working');
    expect(row.attempt).toBe(0); // a suspension gives back its attempt
    // The service's row cache hears of the suspension through its notification: a moment
    // after the database has it.
    const task = await eventually(async () => {
      const seen = await t.app.tasks.get(ALICE, sleeper.id);
      return seen?.runAt ? seen : undefined;
    });
    expect(task.runAt?.getTime()).toBe(row.run_at.getTime());
    expect(task.statusMessage).toMatch(/^Sleeping until .* \(nap\)\.$/);
    const others = await Promise.all(
      [1, 2, 3].map(() => t.app.tasks.start(ALICE, { kind: 'sleep', input: { ms: 0 } })),
    );
    for (const { task: other } of others)
      expect(await finished(other.id)).toMatchObject({ status: 'completed' });
    expect((await stored(sleeper.id)).hold).toBe('time');
    // Cancel reaches it at once.
    expect(await t.app.tasks.cancel(ALICE, sleeper.id)).toMatchObject({ status: 'cancelled' });
  });

  it('wakes when its time comes and finishes, the journalled stage unchanged, attempt 1', async () => {
    const { task } = await t.app.tasks.start(ALICE, {
      kind: 'pipeline',
      input: { stages: 2, sleepMs: 300 },
    });
    await asleep(task.id);
    const [before] = (await t.app.tasks.journals.steps(ALICE, task.id))!;
    const done = await finished(task.id);
    expect(done).toMatchObject({ status: 'completed', attempt: 1, runAt: null });
    const stages = (done.result as { stages: unknown[] }).stages;
    expect(stages[0]).toEqual(before!.result);
    expect(stages[1]).toMatchObject({ stage: 2, attempt: 1 });
  });

  it('costs no timer per sleeping task', async () => {
    const before = timers();
    const sleepers = await Promise.all(
      Array.from({ length: 100 }, (_, i) =>
        t.app.tasks.start(ALICE, {
          kind: 'pipeline',
          input: { stages: 1, sleepMs: 600_000 + i * 1_000 },
        }),
      ),
    );
    await eventually(async () => {
      const { n } = await t.app.db.kysely
        .selectFrom('tasks')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('hold', '=', 'time')
        .where(
          'id',
          'in',
          sleepers.map(({ task }) => task.id),
        )
        .where('status', '=', 'working')
        .executeTakeFirstOrThrow();
      return Number(n) === 100 ? true : undefined;
    }, 30_000);
    expect(t.app.runner?.held).toBe(0);
    // The runner's timers (backstop, lease keeper, the earliest due task) are all there is.
    expect(timers()).toBeLessThanOrEqual(before + 2);
    await t.app.tasks.cancelMany(ALICE, { kinds: ['pipeline'], statuses: ['working'] });
    for (const { task } of sleepers)
      expect((await t.app.tasks.get(ALICE, task.id))?.status).toBe('cancelled');
  });

  it('is gone at once when its task expires', async () => {
    const { task } = await t.app.tasks.start(ALICE, {
      kind: 'pipeline',
      input: { stages: 1, sleepMs: 600_000 },
      ttlMs: 1_500,
    });
    await asleep(task.id);
    await eventually(async () =>
      (await t.app.tasks.get(ALICE, task.id)) === null ? true : undefined,
    );
    await expect(t.app.tasks.cancel(ALICE, task.id)).rejects.toMatchObject({ code: 'NOT_FOUND' });
  });
});
