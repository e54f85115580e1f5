import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { defineTaskKind, KindRegistry } from '../../../src/tasks/kinds.js';
import { Runner } from '../../../src/tasks/runner/runner.js';
import { findStoredTask } from '../../../src/tasks/sql/find.js';
import { eventually, startTestApp, type TestApp } from '../../helpers/app.js';
import { gate } from '../../helpers/runner-kinds.js';

/**
 * The runner's local queue: a claim takes the free slots and a prefetch; the tasks queued are
 * leased (and their leases kept) until a slot frees, dropped when cancelled, and given back
 * on a stop so another worker runs them at once. Runners built here, beside an api-only app,
 * so each test chooses their slots, prefetch and lease.
 */

const alice = { id: 'alice', admin: false };
/** Which worker ran which task, on which attempt, in order. */
const runs: Array<{ id: string; worker: string; attempt: number }> = [];

/** Waits for its gate; records who ran it. */
const gated = (worker: string) =>
  defineTaskKind<Record<string, never>, { worker: string }>({
    name: 'queued',
    description: 'test: completes when the test releases it',
    inputSchema: { type: 'object' },
    async run({ taskId, attempt }) {
      runs.push({ id: taskId, worker, attempt });
      const g = gate(taskId);
      g.arrive();
      await g.released;
      return { worker };
    },
  });

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ env: { ROLE: 'api' }, kinds: [gated('none')] });
});
afterAll(() => t?.stop());

function runner(workerId: string, concurrency: number, prefetch: number, leaseMs = 30_000) {
  const r = new Runner({
    db: t.app.db.kysely,
    events: t.app.events,
    kinds: new KindRegistry([gated(workerId)]),
    log: pino({ level: 'silent' }),
    workerId,
    concurrency,
    prefetch,
    leaseMs,
  });
  return r;
}

async function startTasks(n: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++)
    ids.push((await t.app.tasks.start(alice, { kind: 'queued', input: {} })).task.id);
  return ids;
}

const stored = (id: string) => findStoredTask(t.app.db.kysely, id);
const until = <T>(check: () => Promise<T | undefined> | T | undefined) =>
  eventually(async () => await check(), 10_000);

describe('the local queue', () => {
  it('claims the free slots and the prefetch in one batch, and starts the rest as slots free', async () => {
    const ids = await startTasks(4);
    const a = runner('batch-a', 1, 3);
    a.start();
    onTestFinished(() => a.stop(0));
    await until(() => (a.held === 1 && a.queued === 3 ? true : undefined));
    for (const id of ids)
      expect(await stored(id)).toMatchObject({ worker_id: 'batch-a', attempt: 1 });
    const first = runs.find((r) => ids.includes(r.id))!;
    expect(runs.filter((r) => ids.includes(r.id))).toHaveLength(1);

    // Each release frees the one slot for the next queued task.
    gate(first.id).release();
    for (let n = 2; n <= 4; n++) {
      await until(() => (runs.filter((r) => ids.includes(r.id)).length === n ? true : undefined));
      gate(runs.at(-1)!.id).release();
    }
    for (const id of ids)
      await until(async () => ((await stored(id))?.status === 'completed' ? true : undefined));
    expect(runs.filter((r) => ids.includes(r.id)).map((r) => r.attempt)).toEqual([1, 1, 1, 1]);
  });

  it('keeps the leases of queued tasks while they wait for a slot', async () => {
    const ids = await startTasks(3);
    const leaseMs = 300;
    const a = runner('renew-a', 1, 2, leaseMs);
    a.start();
    onTestFinished(() => a.stop(0));
    await until(() => (a.held === 1 && a.queued === 2 ? true : undefined));
    const queued = ids.filter((id) => !runs.some((r) => r.id === id));
    expect(queued).toHaveLength(2);
    // Renewed until each lease ends two leases past where the claim's ended: renewed at least
    // once after the claim's lease had lapsed, all the while leased to the same attempt.
    const claimed = new Map<string, number>();
    for (const id of queued) claimed.set(id, (await stored(id))!.lease_expires_at!.getTime());
    for (const id of queued) {
      const row = await until(async () => {
        const now = await stored(id);
        return now!.lease_expires_at!.getTime() >= claimed.get(id)! + 2 * leaseMs ? now : undefined;
      });
      expect(row).toMatchObject({ worker_id: 'renew-a', attempt: 1, status: 'working' });
    }
    expect(a.queued).toBe(2);
    for (const id of ids) gate(id).release();
    for (const id of ids)
      await until(async () => ((await stored(id))?.status === 'completed' ? true : undefined));
  });

  it('drops a queued task that is cancelled: it never starts', async () => {
    const ids = await startTasks(2);
    const a = runner('cancel-a', 1, 1);
    a.start();
    onTestFinished(() => a.stop(0));
    await until(() => (a.held === 1 && a.queued === 1 ? true : undefined));
    const running = runs.find((r) => ids.includes(r.id))!.id;
    const queued = ids.find((id) => id !== running)!;
    await t.app.tasks.cancel(alice, queued);
    await until(() => (a.queued === 0 ? true : undefined));
    gate(running).release();
    await until(async () => ((await stored(running))?.status === 'completed' ? true : undefined));
    expect(runs.some((r) => r.id === queued)).toBe(false);
    expect(await stored(queued)).toMatchObject({ status: 'cancelled' });
  });

  it('gives queued tasks back on a stop, so another worker runs them at once on the same attempt', async () => {
    const ids = await startTasks(3);
    const a = runner('stop-a', 1, 2);
    a.start();
    await until(() => (a.held === 1 && a.queued === 2 ? true : undefined));
    const running = runs.find((r) => ids.includes(r.id))!.id;
    const queued = ids.filter((id) => id !== running);

    // The stop waits for the running handler (its grace) but gives the queue back first.
    const stopped = a.stop(30_000);
    for (const id of queued)
      await until(async () => ((await stored(id))?.worker_id === null ? true : undefined));
    const b = runner('stop-b', 4, 0);
    b.start();
    onTestFinished(() => b.stop(0));
    for (const id of queued) {
      await until(() => (runs.some((r) => r.id === id) ? true : undefined));
      gate(id).release();
    }
    for (const id of queued)
      await until(async () => ((await stored(id))?.status === 'completed' ? true : undefined));
    expect(runs.filter((r) => queued.includes(r.id))).toEqual(
      expect.arrayContaining(queued.map((id) => ({ id, worker: 'stop-b', attempt: 1 }))),
    );
    expect(runs.filter((r) => queued.includes(r.id))).toHaveLength(2);

    gate(running).release();
    await stopped;
    expect(await stored(running)).toMatchObject({
      status: 'completed',
      result: { worker: 'stop-a' },
    });
  });
});
