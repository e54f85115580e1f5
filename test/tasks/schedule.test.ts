import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineTaskKind } from '../../src/tasks/kinds.js';
import type { Task } from '../../src/tasks/task.js';
import { eventually, startTestApp, type TestApp } from '../helpers/app.js';
import { hold } from '../helpers/kinds.js';

/**
 * A time to run, priority and the per-key limit (DESIGN §14), on one process with one runner
 * slot, so the order of claims is the order of starts the handlers record.
 */

const alice = { id: 'alice', admin: false };
const started: Array<{ tag: string; at: number }> = [];

/** Records when it starts, then waits until `release` (or its signal) ends it. */
const releases = new Map<string, () => void>();
const note = defineTaskKind<{ tag: string; wait?: boolean }, string>({
  name: 'note',
  description: 'records its start',
  inputSchema: { type: 'object' },
  async run({ input, signal }) {
    started.push({ tag: input.tag, at: Date.now() });
    if (input.wait)
      await new Promise<void>((resolve, reject) => {
        releases.set(input.tag, resolve);
        signal.addEventListener('abort', () => reject(signal.reason), { once: true });
      });
    return input.tag;
  },
});

const GQL_START = `mutation($input: StartTaskInput!) { startTask(input: $input) {
  id status attempt maxAttempts runAt priority concurrencyKey concurrencyLimit lastError { code } } }`;

describe('schedule, priority and limits', () => {
  let t: TestApp;
  let token: string;

  beforeAll(async () => {
    // One slot; a lease long enough that the backstop poll comes every 2 s.
    t = await startTestApp({
      kinds: [note, hold],
      env: { RUNNER_CONCURRENCY: '1', TASK_LEASE_MS: '60000' },
    });
    token = await t.token('alice');
  });
  afterAll(() => t?.stop());

  async function done(id: string): Promise<Task> {
    return eventually(async () => {
      const task = await t.app.tasks.get(alice, id);
      return task?.status === 'completed' ? task : undefined;
    }, 20_000);
  }

  it('does not start a task before its runAt, and wakes for it without waiting for the backstop', async () => {
    const early = await t.app.tasks.start(alice, {
      kind: 'note',
      input: { tag: 'early' },
      delayMs: 300,
    });
    // Due 1.5 s after `early`, well before the first backstop poll after it (2 s).
    const later = await t.app.tasks.start(alice, {
      kind: 'note',
      input: { tag: 'later' },
      delayMs: 1_800,
    });
    expect(early.task).toMatchObject({ status: 'working', attempt: 0 });
    expect(early.task.runAt).toBeInstanceOf(Date);
    await done(later.task.id);
    const first = started.find((s) => s.tag === 'early')!;
    const second = started.find((s) => s.tag === 'later')!;
    expect(first.at).toBeGreaterThanOrEqual(early.task.runAt!.getTime());
    expect(second.at).toBeGreaterThanOrEqual(later.task.runAt!.getTime());
    // Woken by its own due time: it ran before the second task was even due.
    expect(first.at).toBeLessThan(later.task.runAt!.getTime());
    expect((await done(early.task.id)).runAt).toBeNull();
  });

  it('claims a backlog highest priority first, then oldest first', async () => {
    started.length = 0;
    const blocker = await t.app.tasks.start(alice, {
      kind: 'note',
      input: { tag: 'blocker', wait: true },
    });
    await eventually(async () => (releases.has('blocker') ? true : undefined));
    const order = [
      ['p0', 0],
      ['p5a', 5],
      ['m3', -3],
      ['p10', 10],
      ['p5b', 5],
    ] as const;
    const ids = [];
    for (const [tag, priority] of order)
      ids.push(
        (await t.app.tasks.start(alice, { kind: 'note', input: { tag }, priority })).task.id,
      );
    releases.get('blocker')!();
    for (const id of ids) await done(id);
    await done(blocker.task.id);
    expect(started.map((s) => s.tag)).toEqual(['blocker', 'p10', 'p5a', 'p5b', 'p0', 'm3']);
  });

  it('holds a task while its key is at the limit, without keeping other keys waiting', async () => {
    started.length = 0;
    releases.clear();
    const app2 = await startTestApp({ kinds: [note], env: { RUNNER_CONCURRENCY: '3' } });
    try {
      const start = (tag: string, key: string) =>
        app2.app.tasks.start(alice, {
          kind: 'note',
          input: { tag, wait: true },
          concurrencyKey: key,
          concurrencyLimit: 1,
        });
      const a1 = await start('a1', 'a');
      await eventually(async () => (releases.has('a1') ? true : undefined));
      const a2 = await start('a2', 'a');
      const b1 = await start('b1', 'b');
      await eventually(async () => (releases.has('b1') ? true : undefined));
      // a2 is older than b1 and a slot is free, yet it waits: its key is at its limit.
      expect(releases.has('a2')).toBe(false);
      expect((await app2.app.tasks.get(alice, a2.task.id))?.attempt).toBe(0);
      releases.get('a1')!();
      await eventually(async () => (releases.has('a2') ? true : undefined));
      releases.get('a2')!();
      releases.get('b1')!();
      for (const { task } of [a1, a2, b1])
        await eventually(async () =>
          (await app2.app.tasks.get(alice, task.id))?.status === 'completed' ? true : undefined,
        );
      expect(started.map((s) => s.tag)).toEqual(['a1', 'b1', 'a2']);
    } finally {
      await app2.stop();
    }
  });

  it('shows the fields on the GraphQL Task and takes them on StartTaskInput', async () => {
    const runAt = new Date(Date.now() + 3_600_000).toISOString();
    const res = await t.gql(
      GQL_START,
      {
        input: {
          kind: 'note',
          input: { tag: 'gql' },
          runAt,
          priority: 7,
          concurrencyKey: 'acct-1',
          concurrencyLimit: 2,
          retry: { maxAttempts: 5 },
        },
      },
      token,
    );
    expect(res.errors).toBeUndefined();
    expect(res.data.startTask).toMatchObject({
      status: 'WORKING',
      attempt: 0,
      maxAttempts: 5,
      runAt,
      priority: 7,
      concurrencyKey: 'acct-1',
      concurrencyLimit: 2,
      lastError: null,
    });
    const cancelled = await t.app.tasks.cancel(alice, res.data.startTask.id);
    expect(cancelled).toMatchObject({ status: 'cancelled', runAt: null, attempt: 0 });
  });

  it.each([
    [{ priority: 101 }, 'priority must be an integer from -100 to 100'],
    [{ delayMs: -1 }, 'delayMs must be an integer from 0'],
    [{ concurrencyLimit: 0 }, 'concurrencyLimit must be an integer from 1 to 1000'],
    [{ concurrencyKey: '' }, 'concurrencyKey must be 1 to 255'],
    [{ retry: { maxAttempts: 0 } }, 'retry.maxAttempts must be an integer from 1 to 100'],
    [{ retry: { factor: 11 } }, 'retry.factor must be a number from 1 to 10'],
    [
      { retry: { initialDelayMs: 5_000, maxDelayMs: 100 } },
      'retry.maxDelayMs must be an integer from 5000',
    ],
    [
      { retry: { maxDelayMs: 86_400_001 } },
      'retry.maxDelayMs must be an integer from 1000 to 86400000',
    ],
    [{ runAt: '2000-01-01T00:00:00Z', delayMs: 5 }, 'not both'],
    [
      { runAt: new Date(Date.now() + 86_400_000).toISOString(), ttlMs: 60_000 },
      "after the task's expiresAt",
    ],
  ])('refuses %j with BAD_USER_INPUT naming the field and its range', async (fields, message) => {
    const res = await t.gql(
      GQL_START,
      { input: { kind: 'note', input: { tag: 'x' }, ...fields } },
      token,
    );
    expect(res.data).toBeNull();
    expect(res.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
    expect(res.errors?.[0]?.message).toContain(message);
  });
});
