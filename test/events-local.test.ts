import { sql } from 'kysely';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TaskRow } from '../src/db/types.js';
import { TaskEvents } from '../src/tasks/events/hub.js';
import { RowCache } from '../src/tasks/events/row-cache.js';
import { defineTaskKind } from '../src/tasks/kinds.js';
import { findStoredTask } from '../src/tasks/sql/find.js';
import { eventually, startTestApp, type TestApp } from './helpers/app.js';
import { backend } from './helpers/db.js';

/**
 * Changes a process makes itself: they reach its own watchers and cache without the NOTIFY's
 * round trip, and a task it starts, of a kind it runs, with a slot free, is stored already
 * leased to it (the insert is the claim).
 */

const log = pino({ level: 'silent' });
const alice = { id: 'alice', admin: false };
const ID = '0f6a4c1e-7d2b-4f8a-9c3e-5b1d2a4e6f70';
const rowAt = (version: number, status = 'working') =>
  ({
    id: ID,
    version,
    status,
    input: {},
    result: null,
    error: null,
    input_request: null,
  }) as unknown as TaskRow;

/** Runs until the test lets it go. */
let release: () => void = () => {};
let runs = 0;
const held = defineTaskKind<Record<string, never>, string>({
  name: 'held',
  description: 'waits for the test',
  inputSchema: { type: 'object' },
  run: () =>
    new Promise<string>((resolve) => {
      runs++;
      release = () => resolve('let go');
    }),
});

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ kinds: [held] });
});
afterAll(() => t?.stop());

describe('changes a process makes itself', () => {
  it('keeps what a write returned, unless a newer version was announced while it was out', async () => {
    let reads = 0;
    const cache = new RowCache(async () => {
      reads++;
      return rowAt(9);
    });
    cache.connected();
    const stale = cache.track([ID]);
    cache.changed(ID, 3); // another process committed version 3 meanwhile
    stale([rowAt(2)]);
    await cache.read(ID);
    expect(reads).toBe(1);

    const fresh = cache.track([ID]);
    fresh([rowAt(10)]);
    expect((await cache.read(ID))?.version).toBe(10);
    expect(reads).toBe(1);
  });

  it('hands a written row to the watchers at once; its NOTIFY then costs nothing', async () => {
    let reads = 0;
    const hub = new TaskEvents(
      t.app.db.listener(log),
      (id) => {
        reads++;
        return findStoredTask(t.app.db.kysely, id);
      },
      log,
    );
    await hub.start();
    try {
      const { task } = await t.app.tasks.start(alice, { kind: 'sleep', input: { ms: 0 } });
      const done = await eventually(async () => {
        const row = await findStoredTask(t.app.db.kysely, task.id);
        return row?.status === 'completed' ? row : undefined;
      });
      const seen: number[] = [];
      hub.watch(task.id, (row) => row && seen.push(row.version));
      const written = await hub.local([task.id], async () => done);
      expect(written).toBe(done);
      expect(seen).toEqual([done.version]); // delivered before this returned
      expect(await hub.read(task.id)).toBe(done); // and kept: no query
      expect(reads).toBe(0);
      // The same version announced again changes nothing.
      await sql`select pg_notify('taskhandle_task', ${`${task.id}:${done.version}`})`.execute(
        t.app.db.kysely,
      );
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(seen).toEqual([done.version]);
    } finally {
      await hub.stop();
    }
  });

  // PGlite, one connection in this process, has no claim worth sparing: the task is queued.
  it.runIf(backend === 'pg')(
    'stores a task it can run at once already leased to itself, and runs it',
    async () => {
      // A claim pass in flight (the backstop's) leaves the next start to the queue: try a few.
      let leased: TaskRow | undefined;
      for (let i = 0; i < 20 && !leased; i++) {
        const { task } = await t.app.tasks.start(alice, { kind: 'held', input: {} });
        const row = await findStoredTask(t.app.db.kysely, task.id);
        // Attempt 1 as stored by the insert's own statement: version 1, never re-claimed.
        if (row?.version === 1 && row.attempt === 1 && row.worker_id !== null) leased = row;
        await eventually(async () => (runs === i + 1 ? true : undefined));
        release();
        await eventually(async () =>
          (await findStoredTask(t.app.db.kysely, task.id))?.status === 'completed'
            ? true
            : undefined,
        );
      }
      expect(leased).toBeDefined();
      const done = await eventually(async () => {
        const row = await findStoredTask(t.app.db.kysely, leased!.id);
        return row?.status === 'completed' ? row : undefined;
      });
      expect(done).toMatchObject({ attempt: 1, result: 'let go', worker_id: null });
    },
  );
});
