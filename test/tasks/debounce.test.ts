import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineTaskKind } from '../../src/tasks/kinds.js';
import type { StartRequest } from '../../src/tasks/requests.js';
import { releaseLeases } from '../../src/tasks/sql/leases.js';
import { eventually, startTestApp, type TestApp } from '../helpers/app.js';
import { hold, untilAborted } from '../helpers/kinds.js';

/**
 * DESIGN §17 debounce in the domain: one task per burst with the last input, its runAt moved
 * by each start but never past the first start + maxDelayMs, a new burst once it started.
 * Time is driven through the row (created_at moved back), never waited for.
 */

const alice = { id: 'alice', admin: false };
const bob = { id: 'bob', admin: false };
const MINUTE = 60_000;

/** What each run of a `noted` task saw: the burst's input as the claim handed it over. */
const runs = new Map<string, unknown[]>();
const noted = defineTaskKind({
  name: 'noted',
  description: 'notes the input of each run, then waits until cancelled',
  inputSchema: { type: 'object' },
  run: ({ taskId, input, signal }) => {
    runs.set(taskId, [...(runs.get(taskId) ?? []), input]);
    return untilAborted(signal);
  },
});

let t: TestApp;
beforeAll(async () => {
  // The purge stays out of the rows these tests move back in time.
  t = await startTestApp({
    kinds: [hold, noted],
    env: { TASK_PURGE_INTERVAL_MS: '86400000', WEBHOOK_ALLOW_PRIVATE: 'true' },
  });
});
afterAll(() => t?.stop());

const start = (request: StartRequest, actor = alice) =>
  t.app.tasks.start(actor, request).then(({ task }) => task);

const debounced = (key: string, input: unknown, delayMs = MINUTE, extra: object = {}) =>
  start({ kind: 'hold', input, debounce: { key, delayMs }, ...extra });

/** The rows of `owner`'s burst key, open or not, oldest first. */
async function rowsOf(owner: string, ids: readonly string[]) {
  return t.app.db.kysely
    .selectFrom('tasks')
    .selectAll()
    .where('owner', '=', owner)
    .where('id', 'in', ids)
    .orderBy('created_at')
    .execute();
}

/** Moves a task's first start `ms` into the past, with its expiry: as if it began then. */
async function backdate(id: string, ms: number) {
  await sql`update tasks set created_at = created_at - ${ms}::int * interval '1 millisecond',
              expires_at = expires_at - ${ms}::int * interval '1 millisecond'
            where id = ${id}::uuid`.execute(t.app.db.kysely);
}

/** The task's row once a worker holds it (a claim changes no version: the row tells). */
async function running(id: string) {
  return eventually(async () => {
    const [row] = await rowsOf('alice', [id]);
    return row?.worker_id ? row : undefined;
  });
}

describe('a burst', () => {
  it('makes one task when thirty starts race, each answered with it and the last input kept', async () => {
    const answers = await Promise.all(
      Array.from({ length: 30 }, (_, i) => debounced('race', { i })),
    );
    const ids = new Set(answers.map((task) => task.id));
    expect(ids.size).toBe(1);
    // Every start changed the task once, in some order: versions 1..30, each with its input.
    expect(answers.map((task) => task.version).sort((a, b) => a - b)).toEqual(
      Array.from({ length: 30 }, (_, i) => i + 1),
    );
    const last = answers.reduce((a, b) => (b.version > a.version ? b : a));
    const [row] = await rowsOf('alice', [...ids]);
    expect(row?.input).toEqual(last.input);
    expect(row?.version).toBe(30);
    const open = await t.app.db.kysely
      .selectFrom('tasks')
      .select('id')
      .where('owner', '=', 'alice')
      .where('debounce_key', '=', 'race')
      .execute();
    expect(open).toHaveLength(1);
  });

  it('replaces the input and labels, and moves runAt to delayMs after each start', async () => {
    const first = await debounced('move', { v: 1 }, MINUTE, { labels: { tenant: 'acme' } });
    expect(first.runAt!.getTime()).toBe(first.createdAt.getTime() + MINUTE);
    await backdate(first.id, 10_000);
    const second = await debounced('move', { v: 2 }, 2 * MINUTE, { labels: { report: '7' } });
    expect(second.id).toBe(first.id);
    expect(second.version).toBe(2);
    expect(second.input).toEqual({ v: 2 });
    expect(second.labels).toEqual({ report: '7' });
    expect(second.status).toBe('working');
    // Due 2 min after the second start, which is when it was last updated.
    expect(second.runAt!.getTime()).toBe(second.lastUpdatedAt.getTime() + 2 * MINUTE);
    // The label rows follow: the task is found by its new label only.
    const byNew = await t.app.tasks.list(alice, { filter: { labels: { report: '7' } } });
    expect(byNew.tasks.map((task) => task.id)).toEqual([first.id]);
    const byOld = await t.app.tasks.list(alice, { filter: { labels: { tenant: 'acme' } } });
    expect(byOld.tasks.map((task) => task.id)).not.toContain(first.id);
  });

  it('never moves runAt past the first start + maxDelayMs, the tightest a start gave', async () => {
    const first = await start({
      kind: 'hold',
      input: { v: 1 },
      debounce: { key: 'capped', delayMs: MINUTE, maxDelayMs: 3 * MINUTE },
    });
    // The first start was 150 s ago: another minute would pass its cap, 180 s after it.
    await backdate(first.id, 150_000);
    const [moved] = await rowsOf('alice', [first.id]);
    const second = await start({
      kind: 'hold',
      input: { v: 2 },
      debounce: { key: 'capped', delayMs: MINUTE, maxDelayMs: 3 * MINUTE },
    });
    expect(second.id).toBe(first.id);
    expect(second.runAt!.getTime()).toBe(moved!.created_at.getTime() + 3 * MINUTE);
    expect(second.runAt!.getTime()).toBeLessThan(second.lastUpdatedAt.getTime() + MINUTE);
    // A start without a cap keeps the burst's; one with a tighter cap tightens it.
    const third = await debounced('capped', { v: 3 });
    expect(third.runAt!.getTime()).toBe(moved!.created_at.getTime() + 3 * MINUTE);
    const fourth = await start({
      kind: 'hold',
      input: { v: 4 },
      debounce: { key: 'capped', delayMs: MINUTE, maxDelayMs: 160_000 },
    });
    expect(fourth.runAt!.getTime()).toBe(moved!.created_at.getTime() + 160_000);
  });

  it('runs the last input once a start caps the burst at once, and the next start begins a new burst', async () => {
    const first = await start({
      kind: 'noted',
      input: { v: 1 },
      debounce: { key: 'flush', delayMs: MINUTE },
    });
    const flushed = await start({
      kind: 'noted',
      input: { v: 2 },
      debounce: { key: 'flush', delayMs: 0, maxDelayMs: 0 },
    });
    expect(flushed.id).toBe(first.id);
    await running(first.id);
    // A claim may keep the task in its local queue a moment before the handler runs.
    expect(await eventually(async () => runs.get(first.id))).toEqual([{ v: 2 }]);
    const next = await start({
      kind: 'noted',
      input: { v: 3 },
      debounce: { key: 'flush', delayMs: MINUTE },
    });
    expect(next.id).not.toBe(first.id);
    expect(next.version).toBe(1);
    const [started] = await rowsOf('alice', [first.id]);
    expect(started?.input).toEqual({ v: 2 });
    expect(started?.debounce_key).toBeNull();
  });

  it('keeps a started task out of the burst when its lease is given back', async () => {
    const first = await start({
      kind: 'noted',
      input: { v: 1 },
      debounce: { key: 'gone', delayMs: 0 },
    });
    const claimed = await running(first.id);
    const second = await start({
      kind: 'noted',
      input: { v: 2 },
      debounce: { key: 'gone', delayMs: MINUTE },
    });
    expect(second.id).not.toBe(first.id);
    // A graceful stop gives the lease back and uncounts the attempt: attempt 0, no worker, as
    // before its start. It must not come back into the burst (which already has a task).
    expect(
      await releaseLeases(t.app.db.kysely, claimed.worker_id!, [
        { id: first.id, attempt: claimed.attempt },
      ]),
    ).toBe(1);
    // (The runner may claim it again at once: the release wakes it.)
    const [released] = await rowsOf('alice', [first.id]);
    expect(released?.debounce_key).toBeNull();
    const third = await start({
      kind: 'noted',
      input: { v: 3 },
      debounce: { key: 'gone', delayMs: MINUTE },
    });
    expect(third.id).toBe(second.id);
    expect(third.input).toEqual({ v: 3 });
  });

  it('begins a new burst after its task was cancelled or expired unstarted', async () => {
    const first = await debounced('ended', { v: 1 });
    await t.app.tasks.cancel(alice, first.id);
    const second = await debounced('ended', { v: 2 });
    expect(second.id).not.toBe(first.id);
    await sql`update tasks set expires_at = now() - interval '1 second' where id = ${second.id}::uuid`.execute(
      t.app.db.kysely,
    );
    const third = await debounced('ended', { v: 3 });
    expect(third.id).not.toBe(second.id);
    expect(third.version).toBe(1);
    const [expired] = await rowsOf('alice', [second.id]);
    expect(expired?.input).toEqual({ v: 2 });
  });

  it('is read at its new version right after a start joins it, in the process that joined it', async () => {
    const first = await debounced('read-own', { v: 0 });
    for (let v = 1; v <= 20; v++) {
      const joined = await debounced('read-own', { v });
      expect(joined.id).toBe(first.id);
      // A read through the row cache: the joined version, not the one the first start cached.
      expect(await t.app.tasks.get(alice, first.id)).toMatchObject({
        version: v + 1,
        input: { v },
      });
    }
    for (let v = 21; v <= 30; v++) {
      await t.app.tasks.startMany(alice, [
        { kind: 'hold', input: { v }, debounce: { key: 'read-own', delayMs: MINUTE } },
      ]);
      expect(await t.app.tasks.get(alice, first.id)).toMatchObject({
        version: v + 1,
        input: { v },
      });
    }
  });

  it('keeps bursts apart by owner and by kind', async () => {
    const mine = await debounced('shared', { v: 1 });
    const theirs = await start(
      { kind: 'hold', input: {}, debounce: { key: 'shared', delayMs: MINUTE } },
      bob,
    );
    const otherKind = await start({
      kind: 'noted',
      input: {},
      debounce: { key: 'shared', delayMs: MINUTE },
    });
    expect(new Set([mine.id, theirs.id, otherKind.id]).size).toBe(3);
  });

  it('keeps the task alive for the ttlMs of the latest start', async () => {
    const first = await debounced('kept', { v: 1 }, 1_000, { ttlMs: MINUTE });
    await backdate(first.id, 50_000);
    const second = await debounced('kept', { v: 2 }, 1_000, { ttlMs: MINUTE });
    expect(second.id).toBe(first.id);
    expect(second.expiresAt.getTime()).toBe(second.lastUpdatedAt.getTime() + MINUTE);
    expect(second.expiresAt.getTime()).toBe(second.createdAt.getTime() + second.ttlMs);
    expect(second.ttlMs).toBeGreaterThanOrEqual(MINUTE + 50_000);
  });

  it('never keeps it past TASK_MAX_TTL_MS from its first start, and runs it delayMs before', async () => {
    const maxTtl = t.app.config.tasks.maxTtlMs;
    const first = await debounced('bounded', { v: 1 }, MINUTE, { ttlMs: maxTtl });
    await backdate(first.id, maxTtl - 30_000);
    const second = await debounced('bounded', { v: 2 }, MINUTE, { ttlMs: MINUTE });
    expect(second.id).toBe(first.id);
    expect(second.ttlMs).toBe(maxTtl);
    expect(second.expiresAt.getTime()).toBe(second.createdAt.getTime() + maxTtl);
    // Due a minute before the bound (already past): its last input runs, not expires.
    expect(second.runAt!.getTime()).toBe(second.createdAt.getTime() + maxTtl - MINUTE);
  });

  it('attaches the webhook of the start that created the task only', async () => {
    const webhook = { url: 'http://127.0.0.1:9/hook', secret: null };
    const first = await debounced('hooked', { v: 1 }, MINUTE, { webhook });
    await debounced('hooked', { v: 2 }, MINUTE, { webhook });
    const hooks = await t.app.db.kysely
      .selectFrom('task_webhooks')
      .select('id')
      .where('task_id', '=', first.id)
      .execute();
    expect(hooks).toHaveLength(1);
  });

  it('starts a batch whose entries share a key as one task with the last entry input', async () => {
    const tasks = await t.app.tasks.startMany(alice, [
      { kind: 'hold', input: { v: 1 }, debounce: { key: 'batch-b', delayMs: MINUTE } },
      { kind: 'hold', input: { v: 2 }, debounce: { key: 'batch-a', delayMs: MINUTE } },
      { kind: 'hold', input: { plain: true } },
      { kind: 'hold', input: { v: 3 }, debounce: { key: 'batch-b', delayMs: MINUTE } },
    ]);
    expect(tasks.map((task) => task.input)).toEqual([
      { v: 1 },
      { v: 2 },
      { plain: true },
      { v: 3 },
    ]);
    expect(tasks[0]!.id).toBe(tasks[3]!.id);
    expect(new Set(tasks.map((task) => task.id)).size).toBe(3);
    const [row] = await rowsOf('alice', [tasks[0]!.id]);
    expect(row?.input).toEqual({ v: 3 });
  });
});
