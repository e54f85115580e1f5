import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineTaskKind } from '../../../src/tasks/kinds.js';
import type { Task } from '../../../src/tasks/task.js';
import { eventually, startTestApp, type TestApp } from '../../helpers/app.js';
import { storedColumn } from '../../helpers/db.js';

/**
 * A durable task's running time (DESIGN §16): its run-time limit counts the running time of
 * all its runs (a wake-up is a new run of the handler), not of each alone, and not its waits;
 * a retried attempt has the whole limit again. A step whose `fn` takes a while shows RUNNING.
 */

const ALICE = { id: 'alice', admin: false };
const wait = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Two steps of 3 s with a short sleep between: two runs, 6 s of running against a 5 s limit.
 * Each run alone keeps 2 s of the limit to spare for a loaded machine's late timers.
 */
const twoRuns = (name: string, maxAttempts: number) =>
  defineTaskKind<Record<string, never>, string>({
    name,
    description: 'two steps, a sleep between them',
    inputSchema: { type: 'object' },
    timeoutMs: 5_000,
    retry: { maxAttempts, initialDelayMs: 10, factor: 1, maxDelayMs: 10 },
    async run(ctx) {
      await ctx.step('a', () => wait(3_000));
      // Long enough that the nap is still ahead when the run suspends on a loaded machine: a
      // nap found due by then is slept through in the same run, and there is one run only.
      await ctx.sleep('nap', 1_000);
      await ctx.step('b', () => wait(3_000));
      return 'done';
    },
  });

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ kinds: [twoRuns('two-runs', 1), twoRuns('two-runs-retried', 2)] });
});
afterAll(() => t?.stop());

const final = (id: string) =>
  eventually(async () => {
    const task = await t.app.tasks.get(ALICE, id);
    return task && task.status !== 'working' ? task : undefined;
  }, 60_000);

const ranMs = (id: string) => storedColumn(t.app.db.kysely, id, 'ran_ms');

describe("a durable task's run-time limit", { timeout: 90_000 }, () => {
  it('counts the running time of every run: two runs of 3 s each pass a 5 s limit', async () => {
    const { task } = await t.app.tasks.start(ALICE, { kind: 'two-runs', input: {} });
    const done: Task = await final(task.id);
    // Suspended on its nap, the first run left its time with the task.
    expect(await ranMs(task.id)).toBeGreaterThanOrEqual(3_000);
    expect(done.status).toBe('failed');
    expect(done.error).toMatchObject({ code: 'TIMEOUT' });
    const steps = await t.app.tasks.journals.steps(ALICE, task.id);
    expect(steps?.find((s) => s.name === 'a')).toMatchObject({ state: 'COMPLETED' });
    expect(steps?.find((s) => s.name === 'b')?.state).not.toBe('COMPLETED');
  });

  it('gives a retried attempt the whole limit again', async () => {
    const { task } = await t.app.tasks.start(ALICE, { kind: 'two-runs-retried', input: {} });
    const done = await final(task.id);
    // The first attempt timed out in b; the second replays a and the nap, and runs b alone.
    expect(done).toMatchObject({ status: 'completed', attempt: 2, result: 'done' });
    expect(done.lastError).toMatchObject({ code: 'TIMEOUT' });
  });
});

describe('a step that takes a while', { timeout: 60_000 }, () => {
  it('shows RUNNING while its fn runs, then what it ended as', async () => {
    const { task } = await t.app.tasks.start(ALICE, {
      kind: 'pipeline',
      input: { stages: 1, stageMs: 60_000 },
    });
    const running = await eventually(async () => {
      const steps = await t.app.tasks.journals.steps(ALICE, task.id);
      return steps?.find((s) => s.name === 'stage-1' && s.state === 'RUNNING');
    });
    expect(running).toMatchObject({ attempts: 1, endedAt: null, result: null });
    await t.app.tasks.cancel(ALICE, task.id);
  });
});
