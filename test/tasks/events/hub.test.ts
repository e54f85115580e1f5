import { sql } from 'kysely';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { TaskEvents } from '../../../src/tasks/events/hub.js';
import { READY_CHANNEL } from '../../../src/tasks/sql/common.js';
import { findStoredTask } from '../../../src/tasks/sql/find.js';
import type { Task } from '../../../src/tasks/task.js';
import { DELIVERY_CHANNEL } from '../../../src/tasks/webhooks/store.js';
import { collect, eventually, startTestApp } from '../../helpers/app.js';
import { backend } from '../../helpers/db.js';
import { alice, bob, t, useFileApp } from '../../helpers/file-app.js';
import { CANCEL_TASK as CANCEL, FOLLOW_VERSIONS as FOLLOW } from '../../helpers/operations.js';

/** The process's event hub and row cache, on both backends. */

const log = pino({ level: 'silent' });
const START = `mutation($input: StartTaskInput!) { startTask(input: $input) { id status version } }`;
const GET = `query($id: ID!) { task(id: $id) { id status version progress } }`;

useFileApp();

async function start(input: unknown, kind = 'sleep', ttlMs?: number): Promise<string> {
  const response = await t.gql(
    START,
    { input: { kind, input, ...(ttlMs ? { ttlMs } : {}) } },
    alice,
  );
  expect(response.errors).toBeUndefined();
  return response.data.startTask.id;
}

const poll = async (id: string, token = alice) => (await t.gql(GET, { id }, token)).data?.task;

describe('the event hub', () => {
  it('reads a changed task once per event, however many watch it', async () => {
    let reads = 0;
    const hub = new TaskEvents(
      t.app.db.listener(log),
      (id) => {
        reads++;
        return findStoredTask(t.app.db.kysely, id);
      },
      log,
    );
    const heard = new Map<string, number>();
    hub.onChange((changed, version) => heard.set(changed, version));
    await hub.start();
    try {
      const id = await start({ ms: 800, steps: 4 });
      // The insert's news reaches this hub on its own connection, possibly after startTask's
      // answer; watch once it is heard, so only the versions after the first can cost a read.
      await eventually(async () => ((heard.get(id) ?? 0) >= 1 ? true : undefined));
      const seen: number[][] = Array.from({ length: 200 }, () => []);
      const unwatch = seen.map((versions) =>
        hub.watch(id, (row) => row && versions.push(row.version)),
      );
      const final = await eventually(async () => {
        const task = await poll(id);
        return task.status === 'COMPLETED' && seen.every((v) => v.at(-1) === task.version)
          ? task
          : undefined;
      });
      for (const off of unwatch) off();
      // Each version after the first (progress reports, the completion) costs at most one read,
      // whatever the number of watchers: 200 watchers reading for themselves would be 200 a version.
      expect(final.version).toBeGreaterThanOrEqual(3);
      expect(reads).toBeGreaterThan(0);
      expect(reads).toBeLessThanOrEqual(final.version - 1);
      for (const versions of seen) {
        expect(versions).toEqual([...new Set(versions)].sort((a, b) => a - b));
        expect(versions).toEqual(seen[0]);
      }
    } finally {
      await hub.stop();
    }
  });

  it('keeps only the newest pending state for a subscriber that does not read, and still delivers the final one', async () => {
    const actor = { id: 'alice', admin: false };
    const id = await start({ ms: 1_000, steps: 20 });
    const slow = await t.app.tasks.subscriptions.toTask(actor, id);
    const since = (await t.app.tasks.get(actor, id))!.version;
    // A fast subscriber, over WebSocket, follows the run to its end while the slow one reads
    // nothing; the task changes many times after the slow one subscribed.
    const fast = await collect(t.ws(alice), FOLLOW, { id });
    expect(fast.error).toBeUndefined();
    const last = fast.events.at(-1).taskUpdated;
    expect(last.status).toBe('COMPLETED');
    expect(last.version).toBeGreaterThan(since + 2);

    // What the slow subscriber held all along is one state: the final one, not a queue of them.
    const first = await slow.next();
    expect(first.done).toBe(false);
    expect(first.value as Task).toMatchObject({ status: 'completed', version: last.version });
    expect((await slow.next()).done).toBe(true);
  });

  it('tells a hub started without work of changes only, not of queued tasks or due deliveries', async () => {
    const hubs = [false, true].map((work) => {
      const hub = new TaskEvents(
        t.app.db.listener(log),
        (id) => findStoredTask(t.app.db.kysely, id),
        log,
      );
      const heard = { ready: 0, deliveries: 0, hub, work, versions: new Map<string, number>() };
      hub.onReady(() => heard.ready++);
      hub.onDeliveryDue(() => heard.deliveries++);
      hub.onChange((id, version) => heard.versions.set(id, version));
      return heard;
    });
    await Promise.all(hubs.map((h) => h.hub.start({ work: h.work })));
    try {
      // News of a due delivery and of a queued task, then a task started that completes (one
      // started where a slot is free for it is inserted claimed, and wakes no worker).
      await sql`select pg_notify(${DELIVERY_CHANNEL}, ''), pg_notify(${READY_CHANNEL}, 'sleep')`.execute(
        t.app.db.kysely,
      );
      const id = await start({ ms: 0 });
      // Each hub hears of the completion (which may come before startTask's answer); the news
      // before it came first on the same connection, so by then each has heard all it will.
      const completed = await eventually(async () => {
        const row = await findStoredTask(t.app.db.kysely, id);
        return row?.status === 'completed' ? row : undefined;
      });
      await eventually(async () =>
        hubs.every((h) => h.versions.get(id) === completed.version) ? true : undefined,
      );
      const [api, worker] = hubs;
      expect(worker!.ready).toBeGreaterThan(0);
      expect(worker!.deliveries).toBeGreaterThan(0);
      expect(api!.ready).toBe(0);
      expect(api!.deliveries).toBe(0);
    } finally {
      await Promise.all(hubs.map((h) => h.hub.stop()));
    }
  });
});

describe('the row cache', () => {
  it('answers polls of an unchanged task without a query, and the next poll after a change with the new version', async () => {
    const id = await start({ ms: 3_600_000, steps: 1 });
    expect(await poll(id)).toMatchObject({ status: 'WORKING', version: 1 });
    const before = t.app.events.cacheStats;
    for (let i = 0; i < 20; i++)
      expect(await poll(id)).toMatchObject({ status: 'WORKING', version: 1 });
    const after = t.app.events.cacheStats;
    // No read went to the database, so each of the 20 was a hit (the app's own reads of other
    // tasks, a late refresh for a subscriber, may add hits of their own).
    expect(after.misses).toBe(before.misses);
    expect(after.hits - before.hits).toBeGreaterThanOrEqual(20);

    // Changed in this process: the very next poll has it (never older than what this process answered).
    const cancelled = (await t.gql(CANCEL, { id }, alice)).data.cancelTask;
    expect(await poll(id)).toMatchObject({ status: 'CANCELLED', version: cancelled.version });
  });

  it('never serves a cached task to another principal', async () => {
    const id = await start({ ms: 3_600_000, steps: 1 });
    expect(await poll(id)).toMatchObject({ status: 'WORKING' });
    expect(await poll(id)).toMatchObject({ status: 'WORKING' });
    expect(await poll(id, bob)).toBeNull();
    await t.gql(CANCEL, { id }, alice);
  });

  it('never serves a cached task past its expiry, though the row is still stored', async () => {
    const id = await start({ ms: 0 }, 'sleep', 1_000);
    await eventually(async () => ((await poll(id))?.status === 'COMPLETED' ? true : undefined));
    expect(await poll(id)).toMatchObject({ status: 'COMPLETED' });
    const hits = t.app.events.cacheStats.hits;
    expect(await poll(id)).toMatchObject({ status: 'COMPLETED' });
    expect(t.app.events.cacheStats.hits).toBe(hits + 1);
    await eventually(async () => ((await poll(id)) === null ? true : undefined));
    // Gone for the API while the row is still there (the purge has not run).
    expect(await findStoredTask(t.app.db.kysely, id)).toBeDefined();
  });

  it.skipIf(backend === 'pglite')(
    'drops a cached row when another process changes the task',
    async () => {
      // A second app on the same database (Postgres only: PGlite is one process's).
      const other = await startTestApp({ database: t.database });
      try {
        const id = await start({ ms: 3_600_000, steps: 1 });
        expect(await poll(id)).toMatchObject({ version: 1 });
        expect(await poll(id)).toMatchObject({ version: 1 });
        const cancelled = (await other.gql(CANCEL, { id }, alice)).data.cancelTask as {
          version: number;
        };
        const seen = await eventually(async () => {
          const task = await poll(id);
          return task.status === 'CANCELLED' ? (task as { version: number }) : undefined;
        });
        expect(seen.version).toBe(cancelled.version);
      } finally {
        await other.stop();
      }
    },
  );
});
