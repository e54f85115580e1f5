import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineTaskKind } from '../../src/tasks/kinds.js';
import { backoffMs } from '../../src/tasks/retry.js';
import type { Task } from '../../src/tasks/task.js';
import { eventually, startTestApp, type TestApp } from '../helpers/app.js';

/** Failed attempts are retried with backoff (DESIGN §14), on one process. */

const alice = { id: 'alice', admin: false };
const quick = { initialDelayMs: 20, factor: 2, maxDelayMs: 100 };

/** Fails its first `failTimes` attempts with a message naming the attempt. */
const flaky = defineTaskKind<{ failTimes: number }, { attempt: number }>({
  name: 'flaky',
  description: 'fails its first attempts',
  inputSchema: { type: 'object' },
  retry: quick,
  async run({ input, attempt }) {
    if (attempt <= input.failTimes) throw new Error(`failure on attempt ${attempt}`);
    return { attempt };
  },
});

/** Runs longer than its timeout on its first attempt only (a timeout a loaded machine keeps). */
const slowOnce = defineTaskKind<Record<string, never>, string>({
  name: 'slow-once',
  description: 'times out once',
  inputSchema: { type: 'object' },
  timeoutMs: 1_000,
  retry: quick,
  async run({ attempt, signal }) {
    if (attempt === 1)
      await new Promise((_, reject) =>
        signal.addEventListener('abort', () => reject(signal.reason)),
      );
    return 'done';
  },
});

describe('retries', () => {
  let t: TestApp;
  const versions = new Map<string, Task[]>();

  beforeAll(async () => {
    t = await startTestApp({ kinds: [flaky, slowOnce] });
  });
  afterAll(() => t?.stop());

  async function final(id: string): Promise<Task> {
    return eventually(async () => {
      const task = await t.app.tasks.get(alice, id);
      return task && ['COMPLETED', 'FAILED', 'CANCELLED'].includes(task.status.toUpperCase())
        ? task
        : undefined;
    }, 30_000);
  }

  /** Every version of the task as it changes, until it is final. */
  async function follow(id: string): Promise<Task[]> {
    const seen: Task[] = [];
    for await (const task of await t.app.tasks.subscriptions.toTask(alice, id)) seen.push(task);
    versions.set(id, seen);
    return seen;
  }

  it('draws each backoff uniformly from [d/2, d], d growing by the factor up to the cap', () => {
    const policy = { maxAttempts: 10, initialDelayMs: 1_000, factor: 3, maxDelayMs: 20_000 };
    expect(backoffMs(policy, 1, 0)).toBe(500);
    expect(backoffMs(policy, 1, 1)).toBe(1_000);
    expect(backoffMs(policy, 2, 0)).toBe(1_500);
    expect(backoffMs(policy, 3, 1)).toBe(9_000);
    expect(backoffMs(policy, 4, 0)).toBe(10_000);
    expect(backoffMs(policy, 9, 1)).toBe(20_000);
    for (let attempt = 1; attempt < 8; attempt++) {
      const d = Math.min(20_000, 1_000 * 3 ** (attempt - 1));
      for (let i = 0; i < 50; i++) {
        const delay = backoffMs(policy, attempt);
        expect(delay).toBeGreaterThanOrEqual(d / 2);
        expect(delay).toBeLessThanOrEqual(d);
      }
    }
  });

  it('schedules the next attempt within the jitter bounds and says so while WORKING', async () => {
    const { task } = await t.app.tasks.start(alice, {
      kind: 'flaky',
      input: { failTimes: 5 },
      retry: { maxAttempts: 3, initialDelayMs: 400, factor: 2, maxDelayMs: 1_000 },
    });
    const seen = await follow(task.id);
    const retries = seen.filter((v) => v.status === 'working' && v.runAt);
    expect(retries.length).toBe(2);
    for (const [i, retry] of retries.entries()) {
      const d = Math.min(1_000, 400 * 2 ** i);
      const delay = retry.runAt!.getTime() - retry.lastUpdatedAt.getTime();
      // runAt and lastUpdatedAt come from one statement's clock.
      expect(delay).toBeGreaterThanOrEqual(Math.floor(d / 2) - 1);
      expect(delay).toBeLessThanOrEqual(d + 1);
      expect(retry.lastError).toEqual({
        code: 'HANDLER_ERROR',
        message: `failure on attempt ${i + 1}`,
      });
      expect(retry.statusMessage).toContain(`Attempt ${i + 1} of 3 failed (HANDLER_ERROR)`);
      expect(retry.statusMessage).toContain(retry.runAt!.toISOString());
      expect(retry.attempt).toBe(i + 1);
    }
  });

  it('a task that fails twice then completes ends COMPLETED at attempt 3, lastError telling attempt 2', async () => {
    const { task } = await t.app.tasks.start(alice, { kind: 'flaky', input: { failTimes: 2 } });
    expect(task).toMatchObject({ attempt: 0, maxAttempts: 3, lastError: null, runAt: null });
    const done = await final(task.id);
    expect(done).toMatchObject({
      status: 'completed',
      result: { attempt: 3 },
      attempt: 3,
      maxAttempts: 3,
      runAt: null,
      error: null,
      lastError: { code: 'HANDLER_ERROR', message: 'failure on attempt 2' },
    });
  });

  it('exhausted attempts fail the task with the last error, lastError equal to error', async () => {
    const { task } = await t.app.tasks.start(alice, { kind: 'flaky', input: { failTimes: 9 } });
    const done = await final(task.id);
    expect(done).toMatchObject({
      status: 'failed',
      attempt: 3,
      runAt: null,
      error: { code: 'HANDLER_ERROR', message: 'failure on attempt 3' },
    });
    expect(done.lastError).toEqual(done.error);
  });

  it('a timeout ends the attempt only: the next one runs and completes', async () => {
    const { task } = await t.app.tasks.start(alice, { kind: 'slow-once' });
    const done = await final(task.id);
    expect(done).toMatchObject({
      status: 'completed',
      attempt: 2,
      lastError: { code: 'TIMEOUT' },
    });
  });

  it('does not schedule an attempt that could only start after expiresAt: fails then', async () => {
    const { task } = await t.app.tasks.start(alice, {
      kind: 'flaky',
      input: { failTimes: 9 },
      ttlMs: 5_000,
      retry: { maxAttempts: 5, initialDelayMs: 60_000, maxDelayMs: 60_000 },
    });
    const done = await final(task.id);
    expect(done).toMatchObject({
      status: 'failed',
      attempt: 1,
      error: { code: 'HANDLER_ERROR', message: 'failure on attempt 1' },
    });
  });

  it('a TaskFailedError fails at once, without a retry', async () => {
    const { task } = await t.app.tasks.start(alice, {
      kind: 'sleep',
      input: { ms: 0, fail: 'final' },
    });
    const done = await final(task.id);
    expect(done).toMatchObject({ status: 'failed', attempt: 1, error: { message: 'final' } });
  });

  it('sleep with failTimes fails its first attempts and completes on a later one', async () => {
    const { task } = await t.app.tasks.start(alice, {
      kind: 'sleep',
      input: { ms: 0, failTimes: 1 },
      retry: { initialDelayMs: 10 },
    });
    const done = await final(task.id);
    expect(done).toMatchObject({
      status: 'completed',
      attempt: 2,
      lastError: { code: 'HANDLER_ERROR' },
    });
  });

  it('cancels at once during a backoff, and no attempt runs after', async () => {
    const { task } = await t.app.tasks.start(alice, {
      kind: 'flaky',
      input: { failTimes: 9 },
      retry: { initialDelayMs: 3_600_000, maxDelayMs: 3_600_000 },
    });
    const waiting = await eventually(async () => {
      const now = await t.app.tasks.get(alice, task.id);
      return now?.runAt ? now : undefined;
    });
    expect(waiting).toMatchObject({ status: 'working', attempt: 1 });
    const cancelled = await t.app.tasks.cancel(alice, task.id);
    expect(cancelled).toMatchObject({ status: 'cancelled', runAt: null, attempt: 1 });
  });
});
