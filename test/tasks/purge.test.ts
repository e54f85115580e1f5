import { type Kysely, sql } from 'kysely';
import pg from 'pg';
import pino from 'pino';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Database } from '../../src/db/types.js';
import { forgetRateStarts, Purger, purgeExpired } from '../../src/tasks/purge.js';
import { eventually, startTestApp, type TestApp } from '../helpers/app.js';
import { backend, kyselyOn } from '../helpers/db.js';
import { type ServerProcess, spawnServer } from '../helpers/process.js';

/**
 * Inserts `count` finished tasks in one statement. Expired ones expired `expiredAgoMs` ago and
 * earlier, one millisecond apart, so the purge's `order by expires_at` sees them oldest first.
 */
async function insertTasks(
  db: Kysely<Database>,
  owner: string,
  count: number,
  expired: boolean,
  expiredAgoMs = 1_000,
): Promise<void> {
  await sql`
    insert into tasks (id, owner, kind, status, ttl_ms, created_at, last_updated_at, expires_at, poll_interval_ms, max_attempts, timeout_ms)
    select gen_random_uuid(), ${owner}, 'sleep', 'completed', 1000, now() - interval '1 hour', now() - interval '1 hour',
           ${expired ? sql`now() - (${expiredAgoMs}::int + i) * interval '1 millisecond'` : sql`now() + interval '1 hour'`}, 1000, 3, 60000
    from generate_series(1, ${count}::int) as i`.execute(db);
}

async function count(
  db: Kysely<Database>,
  where: 'expired' | 'live' | 'all',
  owner?: string,
): Promise<number> {
  let query = db.selectFrom('tasks').select((eb) => eb.fn.countAll<string>().as('n'));
  if (where === 'expired') query = query.where('expires_at', '<=', sql<Date>`now()`);
  if (where === 'live') query = query.where('expires_at', '>', sql<Date>`now()`);
  if (owner) query = query.where('owner', '=', owner);
  return Number((await query.executeTakeFirstOrThrow()).n);
}

/** Fails instead of hanging when `promise` does not settle: for "never waits on a lock". */
function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>(
    (_, reject) =>
      (timer = setTimeout(() => reject(new Error(`${what} did not finish within ${ms} ms`)), ms)),
  );
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

describe('purgeExpired', () => {
  let t: TestApp;
  let db: Kysely<Database>;
  beforeAll(async () => {
    // ROLE=api: no Purger of the app's own runs here; the test calls the purge itself.
    t = await startTestApp({ env: { ROLE: 'api' } });
    db = t.app.db.kysely;
  });
  afterAll(() => t?.stop());
  beforeEach(async () => {
    await db.deleteFrom('tasks').execute();
  });

  it('deletes every expired row in batches and leaves unexpired ones', async () => {
    await insertTasks(db, 'alice', 2_345, true);
    await insertTasks(db, 'alice', 7, false);
    expect(await purgeExpired(db, 500)).toBe(2_345);
    expect(await count(db, 'expired')).toBe(0);
    expect(await count(db, 'live')).toBe(7);
    expect(await purgeExpired(db, 500)).toBe(0);
  });

  it('deletes a batch that comes back exactly full, then stops on the empty one', async () => {
    await insertTasks(db, 'alice', 1_000, true);
    expect(await purgeExpired(db, 250)).toBe(1_000);
    expect(await count(db, 'all')).toBe(0);
  });

  it('purges tasks that expired through the API, whatever their status', async () => {
    await insertTasks(db, 'alice', 3, true);
    await sql`update tasks set status = 'working', worker_id = 'w', lease_expires_at = now() + interval '1 minute' where owner = 'alice'`.execute(
      db,
    );
    expect(await purgeExpired(db)).toBe(3);
  });

  it('runs on its interval in a Purger and logs how many rows it deleted', async () => {
    await insertTasks(db, 'alice', 1_234, true);
    await insertTasks(db, 'alice', 5, false);
    const lines: Array<{ msg: string; deleted?: number }> = [];
    const log = pino(
      { level: 'info' },
      { write: (line: string) => void lines.push(JSON.parse(line)) },
    );
    const purger = new Purger(db, 50, log, { batchSize: 100 });
    purger.start();
    try {
      await eventually(async () => ((await count(db, 'expired')) === 0 ? true : undefined));
    } finally {
      await purger.stop();
    }
    const purged = lines.filter((l) => l.msg === 'purged expired tasks');
    expect(purged.reduce((sum, l) => sum + (l.deleted ?? 0), 0)).toBe(1_234);
    expect(await count(db, 'live')).toBe(5);
  });

  it("forgets the rate limits' first starts past their period, in a Purger pass, and keeps the rest", async () => {
    await sql`
      insert into task_rate_starts (kind, key, started_at, task_id, forget_at)
      select 'sleep', 'k' || (i % 7), now() - interval '2 hours', gen_random_uuid(),
             now() - interval '1 hour' + i * interval '1 millisecond'
      from generate_series(1, 2345) i`.execute(db);
    await sql`
      insert into task_rate_starts (kind, key, started_at, task_id, forget_at)
      values ('sleep', 'k1', now(), gen_random_uuid(), now() + interval '1 hour')`.execute(db);
    expect(await forgetRateStarts(db, { batchSize: 500 })).toBe(2_345);
    await sql`
      insert into task_rate_starts (kind, key, started_at, task_id, forget_at)
      values ('sleep', 'k2', now() - interval '2 hours', gen_random_uuid(), now() - interval '1 hour')`.execute(
      db,
    );
    await new Purger(db, 86_400_000, pino({ level: 'silent' })).runOnce();
    const left = await sql<{ key: string }>`select key from task_rate_starts`.execute(db);
    expect(left.rows.map((r) => r.key)).toEqual(['k1']);
  });

  it('stops a long pass after its current batch when the Purger stops', async () => {
    await insertTasks(db, 'alice', 50_000, true);
    const purger = new Purger(db, 86_400_000, pino({ level: 'silent' }), { batchSize: 100 });
    const pass = purger.runOnce();
    await eventually(
      async () => ((await count(db, 'expired')) < 50_000 ? true : undefined),
      20_000,
      5,
    );
    await within(purger.stop(), 20_000, 'stopping the purger');
    await pass;
    const left = await count(db, 'expired');
    // Stopped part-way: the rest waits for the next process to purge (500 batches never ran in this window).
    expect(left).toBeGreaterThan(0);
    expect(left % 100).toBe(0);
    expect(await purgeExpired(db, { batchSize: 10_000 })).toBe(left);
  });
});

/** Everything below shares one database between processes and clients: Postgres only (PGlite is in-process). */
describe.skipIf(backend === 'pglite')('purge on a shared Postgres', () => {
  let api: TestApp;
  let db: Kysely<Database>;
  let locker: pg.Client;
  const workers: ServerProcess[] = [];

  beforeAll(async () => {
    api = await startTestApp({ env: { ROLE: 'api', TASK_MIN_TTL_MS: '1' } });
    db = api.app.db.kysely;
  });
  beforeEach(async () => {
    await db.deleteFrom('tasks').execute();
    locker = new pg.Client({ connectionString: api.database.url });
    await locker.connect();
  });
  afterEach(async () => {
    await Promise.all(workers.map((w) => w.stop('SIGKILL')));
    await locker.end().catch(() => {}); // rolls back a lock a failed test left open
  });
  afterAll(async () => {
    await api?.stop();
  });

  /** Locks one row in an open transaction on a separate connection, as a worker mid-write would. */
  async function lockOldestExpired(): Promise<{ id: string; release(): Promise<void> }> {
    await locker.query('begin');
    const { rows } = await locker.query<{ id: string }>(
      'select id from tasks where expires_at <= now() order by expires_at limit 1 for update',
    );
    return { id: rows[0]!.id, release: async () => void (await locker.query('commit')) };
  }

  it('skips a row another transaction has locked instead of waiting, and deletes it once free', async () => {
    await insertTasks(db, 'alice', 1_500, true);
    const locked = await lockOldestExpired();
    try {
      // The locked row is first in the purge's order: a purge that waited on it would hang here.
      expect(await within(purgeExpired(db, 1_000), 20_000, 'purge next to a locked row')).toBe(
        1_499,
      );
      expect(await db.selectFrom('tasks').select('id').execute()).toEqual([{ id: locked.id }]);
    } finally {
      await locked.release();
    }
    expect(await purgeExpired(db)).toBe(1);
    expect(await count(db, 'all')).toBe(0);
  });

  it('is safe from several purgers at once: every row deleted exactly once', async () => {
    await insertTasks(db, 'alice', 6_000, true);
    const pools = Array.from({ length: 3 }, () => kyselyOn(api.database, 1));
    try {
      const deleted = await Promise.all(pools.map((p) => purgeExpired(p, 200)));
      expect(deleted.reduce((a, b) => a + b, 0)).toBe(6_000);
      expect(await count(db, 'all')).toBe(0);
    } finally {
      await Promise.all(pools.map((p) => p.destroy()));
    }
  });

  it('really deletes expired rows from a worker process purging on a short interval, skipping a locked row', async () => {
    const alice = await api.token('alice');
    // Tasks that expire through the API (a live one stays), plus a backlog inserted in bulk.
    const started: string[] = [];
    for (let i = 0; i < 5; i++) {
      const res = await fetch(`${api.url}/v1/jobs`, {
        method: 'POST',
        headers: { authorization: `Bearer ${alice}`, 'content-type': 'application/json' },
        body: JSON.stringify({ kind: 'sleep', input: { ms: 0 }, ttlMs: 1 }),
      });
      expect(res.status).toBe(202);
      started.push(((await res.json()) as { taskId: string }).taskId);
    }
    const live = await fetch(`${api.url}/v1/jobs`, {
      method: 'POST',
      headers: { authorization: `Bearer ${alice}`, 'content-type': 'application/json' },
      body: JSON.stringify({ kind: 'sleep', input: { ms: 600_000 }, ttlMs: 600_000 }),
    });
    const liveId = ((await live.json()) as { taskId: string }).taskId;
    await insertTasks(db, 'bob', 2_500, true, 60_000);
    await eventually(async () => ((await count(db, 'expired')) === 2_505 ? true : undefined));
    const locked = await lockOldestExpired();

    const worker = await spawnServer({
      role: 'worker',
      databaseUrl: api.database.url!,
      env: { TASK_PURGE_INTERVAL_MS: '200', TASK_SHUTDOWN_GRACE_MS: '100' },
    });
    workers.push(worker);
    const lines = worker.logs() as Array<{ msg?: string; deleted?: number }>;
    const purgedSoFar = () =>
      lines
        .filter((l) => l.msg === 'purged expired tasks')
        .reduce((sum, l) => sum + (l.deleted ?? 0), 0);

    try {
      // Everything expired goes, except the locked row, while its lock is held.
      await eventually(async () => (purgedSoFar() === 2_504 ? true : undefined), 30_000, 50).catch(
        (err) => {
          throw new Error(
            `${(err as Error).message}; purged ${purgedSoFar()}; worker stderr: ${worker.stderr()}`,
          );
        },
      );
      expect(
        await db
          .selectFrom('tasks')
          .select('id')
          .where('expires_at', '<=', sql<Date>`now()`)
          .execute(),
      ).toEqual([{ id: locked.id }]);
      for (const id of started)
        if (id !== locked.id)
          expect(
            await db.selectFrom('tasks').select('id').where('id', '=', id).executeTakeFirst(),
          ).toBeUndefined();

      // Once the lock is gone, a later pass deletes that row too; the unexpired task stays.
      await locked.release();
      await eventually(
        async () => ((await count(db, 'expired')) === 0 ? true : undefined),
        30_000,
        50,
      );
      await eventually(async () => (purgedSoFar() === 2_505 ? true : undefined), 10_000, 50);
      expect(await db.selectFrom('tasks').select('id').execute()).toEqual([{ id: liveId }]);
    } finally {
      expect((await worker.stop('SIGTERM')).code).toBe(0);
    }
  });
});
