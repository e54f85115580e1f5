import type { Kysely } from 'kysely';
import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../../../src/db/types.js';
import { defineTaskKind } from '../../../src/tasks/kinds.js';
import { eventually, startTestApp, type TestApp } from '../../helpers/app.js';
import { backend, freshDatabase, kyselyOn, type TestDatabase } from '../../helpers/db.js';

/**
 * A parent suspending on its children while their outcomes are being written (DESIGN §16).
 * Another connection plays a batch of the children's outcomes: it ends one child, waits until
 * the parent's suspension waits for it, then ends the others. The suspension meets a child's
 * end at the parent's own row (migration 0017), never at the children's: it waits for the
 * batch to commit and then reads every child ended, and the batch never waits for it. When the
 * suspension locked the children `for share` instead, in its plan's order, the batch ending a
 * child it already held closed a cycle that Postgres broke after `deadlock_timeout` by failing
 * one side (the parent's one attempt, here). The pair of children the batch ends first and
 * second is chosen so that such a suspension would have locked them in the other order.
 * Postgres only: PGlite has one connection.
 */

const ALICE = { id: 'alice', admin: false };
const CHILDREN = 4;

/** Runs until its run is aborted: its row is ended by the test's connection, not by a runner. */
const parked = defineTaskKind<Record<string, never>, unknown>({
  name: 'parked',
  description: 'runs until aborted',
  inputSchema: { type: 'object' },
  run: (ctx) =>
    new Promise((_, reject) => {
      ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason), { once: true });
    }),
});

/** Starts its children, waits for `go`, then for all of them; one attempt only. */
const fanIn = defineTaskKind<Record<string, never>, unknown>({
  name: 'fan-in',
  description: 'waits for a signal, then for its children',
  inputSchema: { type: 'object' },
  retry: { maxAttempts: 1 },
  async run(ctx) {
    const children = await Promise.all(
      Array.from({ length: CHILDREN }, (_, i) => ctx.startChild(`c${i + 1}`, 'parked', {})),
    );
    await ctx.waitForSignal('go');
    return Promise.all(children.map((c) => c.result()));
  },
});

describe.skipIf(backend !== 'pg')('a suspension on children whose outcomes are in flight', () => {
  let database: TestDatabase;
  let t: TestApp;
  let db: Kysely<Database>;
  beforeAll(async () => {
    database = await freshDatabase();
    t = await startTestApp({ database, kinds: [parked, fanIn] });
    db = kyselyOn(database, 2);
  });
  afterAll(async () => {
    await t?.stop();
    await db?.destroy();
    await database?.drop();
  });

  /** Two children that a scan of them by id or by place, whatever its plan, meets in this order. */
  const lockOrder = async (parentId: string) => {
    const { rows } = await sql<{ id: string; page: number; item: number }>`
      select id, (ctid::text::point)[0]::int as page, (ctid::text::point)[1]::int as item
      from tasks where parent_id = ${parentId}::uuid`.execute(db);
    const before = (a: (typeof rows)[0], b: (typeof rows)[0]) =>
      a.id < b.id && (a.page < b.page || (a.page === b.page && a.item < b.item));
    for (const a of rows) for (const b of rows) if (before(a, b)) return { first: a, second: b };
    return undefined;
  };

  it('waits for the children’s outcomes in flight, never deadlocks with them, and completes on its one attempt', async () => {
    // Children whose ids and places both sort the same way, in at least one pair (a parent
    // whose four children sort in exactly opposite orders is started again).
    let parentId = '';
    let pair: Awaited<ReturnType<typeof lockOrder>>;
    for (let tries = 0; !pair && tries < 5; tries++) {
      // The last parent's children, parked, would hold runner slots the next one needs.
      if (parentId) await t.app.tasks.cancel(ALICE, parentId);
      parentId = (await t.app.tasks.start(ALICE, { kind: 'fan-in', input: {} })).task.id;
      const running = await eventually(async () => {
        const { rows } = await sql<{ n: number }>`
          select count(*)::int as n from tasks
          where parent_id = ${parentId}::uuid and worker_id is not null`.execute(db);
        return rows[0]!.n === CHILDREN ? true : undefined;
      });
      expect(running).toBe(true);
      pair = await lockOrder(parentId);
    }
    if (!pair) throw new Error('no two children sorted alike in five parents');

    const batch = new pg.Client({ connectionString: database.url });
    await batch.connect();
    const complete = (id: string) =>
      batch.query(
        `update tasks set status = 'completed', result = '1', worker_id = null,
           lease_expires_at = null, version = version + 1, last_updated_at = now()
         where id = $1`,
        [id],
      );
    try {
      await batch.query('begin');
      await complete(pair.second.id);
      await t.app.tasks.journals.signal(ALICE, parentId, 'go', null);
      // The parent's run reached its suspension, which waits for the batch.
      const batchPid = (await batch.query<{ pid: number }>('select pg_backend_pid() as pid'))
        .rows[0]!.pid;
      await eventually(async () => {
        const { rows } = await sql<{ n: number }>`
          select count(*)::int as n from pg_stat_activity
          where datname = current_database() and wait_event_type = 'Lock'
            and ${batchPid}::int = any(pg_blocking_pids(pid))`.execute(db);
        return rows[0]!.n > 0 ? true : undefined;
      });
      const { rows } = await batch.query<{ id: string }>(
        'select id from tasks where parent_id = $1 and id <> $2',
        [parentId, pair.second.id],
      );
      for (const { id } of rows) await complete(id);
      await batch.query('commit');
    } finally {
      await batch.end();
    }

    const done = await eventually(async () => {
      const task = await t.app.tasks.get(ALICE, parentId);
      return task && task.status !== 'working' ? task : undefined;
    });
    expect(done).toMatchObject({ status: 'completed', attempt: 1, result: [1, 1, 1, 1] });
  });
});
