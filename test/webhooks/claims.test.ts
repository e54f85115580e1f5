import type { Kysely } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../../src/db/types.js';
import { claimDeliveries, finishDelivered } from '../../src/tasks/webhooks/deliveries.js';
import { backend, freshDatabase, kyselyOn, type TestDatabase } from '../helpers/db.js';

/**
 * The claim of migration 0003 against an outbox that has delivered a lot since its last vacuum:
 * its cost is the due deliveries it takes, not the dead entries the delivered ones left in the
 * due index, whatever the statistics or the cached plan say (Postgres only: buffer counts come
 * from EXPLAIN).
 */

const DELIVERED = 20_000;

/** `n` tasks, each with a webhook and a pending delivery of version 1. @returns their ids */
async function enqueue(client: pg.Client, n: number): Promise<string[]> {
  const { rows } = await client.query<{ id: string }>(
    `with t as (
       insert into tasks (id, owner, kind, input, ttl_ms, expires_at, poll_interval_ms,
                          max_attempts, timeout_ms)
       select gen_random_uuid(), 'alice', 'noop', '{}', 3600000, now() + interval '1 hour',
              1000, 3, 60000
       from generate_series(1, $1::int)
       returning *
     ), w as (
       insert into task_webhooks (id, task_id, url, secret, after_version)
       select gen_random_uuid(), t.id, 'http://127.0.0.1:9/hook',
              'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', 0
       from t
       returning id, task_id
     )
     insert into task_deliveries (id, task_id, webhook_id, version, status, snapshot)
     select gen_random_uuid(), t.id, w.id, 1, 'working', '{}'
     from t join w on w.task_id = t.id
     returning id`,
    [n],
  );
  return rows.map((r) => r.id);
}

/** Buffers a claim of up to 16 touched, as EXPLAIN counts them (the function's own included). */
async function claimBuffers(client: pg.Client): Promise<{ buffers: number; claimed: number }> {
  const { rows } = await client.query(
    `explain (analyze, buffers, format json)
     select json_array_length(claims) from taskhandle_claim_deliveries('test-worker', 16, 60000)`,
  );
  const plan = rows[0]['QUERY PLAN'][0].Plan;
  const { rows: taken } = await client.query(
    `select count(*)::int as n from task_deliveries where worker_id = 'test-worker' and state = 'pending'`,
  );
  return { buffers: plan['Shared Hit Blocks'] + plan['Shared Read Blocks'], claimed: taken[0].n };
}

/**
 * Resolves once every transaction that began before now has ended, in any database of the
 * cluster: only then are the rows changed before dead to every snapshot, and an index scan
 * that passes their entries may mark them dead. (Test files run side by side, each in a
 * database of its own; a transaction of theirs that began before the update would keep its
 * old rows visible, and the first claim would mark nothing.)
 */
async function untilDeadToAll(client: pg.Client): Promise<void> {
  const { rows } = await client.query<{ xid: string }>('select txid_current()::text as xid');
  for (;;) {
    const { rows: now } = await client.query<{ passed: boolean }>(
      'select txid_snapshot_xmin(txid_current_snapshot()) > $1::bigint as passed',
      [rows[0]!.xid],
    );
    if (now[0]!.passed) return;
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe.skipIf(backend !== 'pg')('webhooks: the claim (Postgres)', () => {
  let database: TestDatabase;
  let client: pg.Client;
  let db: Kysely<Database>;
  beforeAll(async () => {
    database = await freshDatabase();
    client = new pg.Client({ connectionString: database.url });
    await client.connect();
    db = kyselyOn(database, 2);
  });
  afterAll(async () => {
    await client?.end();
    await db?.destroy();
    await database?.drop();
  });

  it('does not read the dead entries of delivered rows again, whatever the plan was made on', async () => {
    // Plans made while the outbox is small, as after a deploy on a new database: a connection's
    // statements settle on a generic plan after a few calls, and keep it as the tables grow.
    for (let i = 0; i < 8; i++) {
      await enqueue(client, 1);
      await claimBuffers(client);
    }
    await enqueue(client, DELIVERED);
    await client.query(`update task_deliveries set state = 'delivered', delivered_at = now()`);
    await untilDeadToAll(client);
    await enqueue(client, 4);
    const first = await claimBuffers(client);
    expect(first.claimed).toBe(4);
    await enqueue(client, 4);
    const second = await claimBuffers(client);
    expect(second.claimed).toBe(8);
    const heapPages = Number(
      (await client.query(`select pg_relation_size('task_deliveries') / 8192 as n`)).rows[0].n,
    );
    expect(heapPages).toBeGreaterThan(500);
    // The first claim marked the dead entries it passed; the second takes its 4 for about a
    // hundred buffers (their rows and the entries it writes), where a bitmap scan would read
    // every dead row's heap page again.
    expect(second.buffers).toBeLessThan(heapPages / 4);
  });

  it('records delivered outcomes and claims the next version of their webhooks in one call', async () => {
    const [id] = await enqueue(client, 1);
    const { rows } = await client.query<{ webhook_id: string; task_id: string }>(
      `select webhook_id, task_id from task_deliveries where id = $1`,
      [id],
    );
    const { webhook_id, task_id } = rows[0]!;
    await client.query(
      `insert into task_deliveries (id, task_id, webhook_id, version, status, snapshot)
       values (gen_random_uuid(), $1, $2, 2, 'completed', '{}')`,
      [task_id, webhook_id],
    );
    const claimed = await claimDeliveries(db, 'w2', 100, 60000);
    // Version 2 waits for version 1, however many slots are free.
    expect(claimed.filter((c) => c.webhook_id === webhook_id).map((c) => c.version)).toEqual([1]);
    const first = claimed.find((c) => c.webhook_id === webhook_id)!;
    const next = await finishDelivered(db, 'w2', [{ claim: first, statusCode: 204 }], {
      limit: 16,
      leaseMs: 60000,
    });
    expect([...next.held]).toEqual([first.id]);
    expect(next.claimed.map((c) => [c.webhook_id, c.version])).toEqual([[webhook_id, 2]]);
    // A stale lease records nothing: the fencing token is (worker, attempts).
    const stale = await finishDelivered(db, 'another-worker', [
      { claim: next.claimed[0]!, statusCode: 204 },
    ]);
    expect(stale.held.size).toBe(0);
  });
});
