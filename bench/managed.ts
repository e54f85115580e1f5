import { copyFileSync, mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Kysely, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import { migrate } from '../src/db/migrate.js';
import { prepared } from '../src/db/pg-pool.js';
import type { Database } from '../src/db/types.js';
import { DEFAULT_RETRY } from '../src/tasks/retry.js';
import { claimWork } from '../src/tasks/sql/claim.js';
import { notifyChanged, notifyReady } from '../src/tasks/sql/common.js';
import { insertTask } from '../src/tasks/sql/insert.js';

/**
 * `npx tsx bench/managed.ts`: the claim beside delayed and held tasks (DESIGN §14), each figure
 * against its floor measured in the same run, on three throwaway databases of one server.
 *
 * - claim latency on an empty queue, and the drain of 2 000 ready tasks (claimed 8 at a time,
 *   each completed), with nothing else stored, against the same with 100 000 tasks delayed a
 *   day and 10 000 held by a key at its limit (2 leased tasks of that key running);
 * - accept: sequential inserts with the 0004 columns and insert, against the schema and
 *   insert statement of migration 0003, each on a database of its own.
 */

const BASE = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const ROUNDS = 3;
const MIGRATIONS = fileURLToPath(new URL('../migrations/', import.meta.url));

async function database(name: string, upTo?: string): Promise<Kysely<Database>> {
  const admin = new pg.Client({ connectionString: BASE });
  await admin.connect();
  await admin.query(`drop database if exists ${name} with (force)`);
  await admin.query(`create database ${name}`);
  await admin.end();
  const url = new URL(BASE);
  url.pathname = `/${name}`;
  const db = new Kysely<Database>({
    dialect: new PostgresDialect({
      pool: new pg.Pool({ connectionString: url.toString(), max: 2 }),
    }),
  });
  let dir = MIGRATIONS;
  if (upTo) {
    dir = mkdtempSync(join(tmpdir(), 'migrations-'));
    for (const f of readdirSync(MIGRATIONS))
      if (f <= upTo) copyFileSync(join(MIGRATIONS, f), join(dir, f));
  }
  await migrate(db, dir);
  return db;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const quantile = (xs: number[], q: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * q))]!;

async function claimLatency(db: Kysely<Database>, n: number): Promise<number[]> {
  const ms: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await claimWork(db, 'bench', ['bench'], 8, 30_000);
    ms.push(performance.now() - t0);
  }
  return ms;
}

async function readyTasks(db: Kysely<Database>, n: number): Promise<void> {
  await sql`insert into tasks (id, owner, kind, ttl_ms, expires_at, poll_interval_ms, max_attempts, timeout_ms)
    select gen_random_uuid(), 'o' || (i % 50), 'bench', 3600000, now() + interval '1 hour', 1000, 3, 60000
    from generate_series(1, ${n}::int) i`.execute(db);
}

/** Claims and completes `n` ready tasks, 8 at a time: tasks a second. */
async function drain(db: Kysely<Database>, n: number): Promise<number> {
  await readyTasks(db, n);
  const t0 = performance.now();
  for (let done = 0; done < n; ) {
    const { rows } = await claimWork(db, 'bench', ['bench'], 8, 30_000);
    if (rows.length === 0) throw new Error('drain: nothing claimed');
    await sql`update tasks set status = 'completed', worker_id = null, lease_expires_at = null,
      version = version + 1 where id = any(${rows.map((r) => r.id)}::uuid[])`.execute(db);
    done += rows.length;
  }
  return n / ((performance.now() - t0) / 1000);
}

async function backdrop(db: Kysely<Database>): Promise<void> {
  await sql`insert into tasks (id, owner, kind, ttl_ms, expires_at, poll_interval_ms, max_attempts,
      timeout_ms, run_at, hold)
    select gen_random_uuid(), 'o' || (i % 50), 'bench', 86400000 * 2, now() + interval '2 days', 1000, 3,
      60000, now() + interval '1 day' + i * interval '1 millisecond', 'time'
    from generate_series(1, 100000) i`.execute(db);
  await sql`insert into tasks (id, owner, kind, ttl_ms, expires_at, poll_interval_ms, max_attempts,
      timeout_ms, concurrency_key, concurrency_limit, hold, worker_id, lease_expires_at, attempt)
    select gen_random_uuid(), 'sat-owner', 'bench', 86400000, now() + interval '1 day', 1000, 3,
      60000, 'saturated', 2, case when i <= 2 then null else 'key' end,
      case when i <= 2 then 'elsewhere' end, case when i <= 2 then now() + interval '1 day' end,
      case when i <= 2 then 1 else 0 end
    from generate_series(1, 10002) i`.execute(db);
  await sql`insert into task_key_holds (kind, key) values ('bench', 'saturated')`.execute(db);
  await sql`analyze tasks`.execute(db);
}

/** The insert of migration 0003's schema, as `insertTask` sent it before 0004: prepared, notifying. */
async function acceptOld(db: Kysely<Database>, n: number): Promise<number> {
  const t0 = performance.now();
  for (let i = 0; i < n; i++)
    await sql`${prepared}
      with t as (
        insert into tasks (id, owner, kind, input, ttl_ms, created_at, last_updated_at, expires_at,
                           poll_interval_ms, idempotency_key, max_attempts, timeout_ms)
        select ${crypto.randomUUID()}::uuid, ${'alice'}, ${'bench'}, ${'{}'}::jsonb, ${3_600_000}::int,
               c.at, c.at, c.at + ${3_600_000}::int * interval '1 millisecond', ${1_000}::int,
               ${null}, ${3}::int, ${60_000}::int
        from (select date_trunc('milliseconds', now()) as at) c
        on conflict (owner, idempotency_key) where idempotency_key is not null do nothing
        returning *
      )
      select t.*, ${notifyChanged} as notified, ${notifyReady} as ready from t`.execute(db);
  return n / ((performance.now() - t0) / 1000);
}

async function acceptNew(db: Kysely<Database>, n: number): Promise<number> {
  const t0 = performance.now();
  for (let i = 0; i < n; i++)
    await insertTask(db, {
      id: crypto.randomUUID(),
      owner: 'alice',
      kind: 'bench',
      input: {},
      ttlMs: 3_600_000,
      pollIntervalMs: 1_000,
      timeoutMs: 60_000,
      idempotencyKey: null,
      runAt: null,
      priority: 0,
      concurrencyKey: null,
      concurrencyLimit: null,
      retry: DEFAULT_RETRY,
    });
  return n / ((performance.now() - t0) / 1000);
}

const empty = await database('bench_managed_empty');
const full = await database('bench_managed_full');
const before = await database('bench_managed_0003', '0003_delivery_claims.sql');
const after = await database('bench_managed_0004');
await backdrop(full);

const lat = { empty: [] as number[], full: [] as number[] };
const rate = { empty: [] as number[], full: [] as number[] };
const acc = { old: [] as number[], now: [] as number[] };
for (let round = 0; round < ROUNDS; round++) {
  lat.empty.push(...(await claimLatency(empty, 200)));
  lat.full.push(...(await claimLatency(full, 200)));
  rate.full.push(await drain(full, 2_000));
  rate.empty.push(await drain(empty, 2_000));
  acc.now.push(await acceptNew(after, 1_000));
  acc.old.push(await acceptOld(before, 1_000));
}
const f = (x: number, d = 2) => x.toFixed(d);
console.log(
  '| measure | floor (nothing waiting / 0003) | with 100 000 delayed + 10 000 held / 0004 | ratio |',
);
console.log('| --- | --- | --- | --- |');
console.log(
  `| claim on an empty queue, median ms | ${f(median(lat.empty), 3)} | ${f(median(lat.full), 3)} | ${f(median(lat.full) / median(lat.empty))} |`,
);
console.log(
  `| claim on an empty queue, p99 ms | ${f(quantile(lat.empty, 0.99), 3)} | ${f(quantile(lat.full, 0.99), 3)} | ${f(quantile(lat.full, 0.99) / quantile(lat.empty, 0.99))} |`,
);
console.log(
  `| drain, tasks/s (median of ${ROUNDS}) | ${f(median(rate.empty), 0)} | ${f(median(rate.full), 0)} | ${f(median(rate.full) / median(rate.empty))} |`,
);
console.log(
  `| accept, inserts/s (median of ${ROUNDS}) | ${f(median(acc.old), 0)} | ${f(median(acc.now), 0)} | ${f(median(acc.now) / median(acc.old))} |`,
);
await Promise.all([empty, full, before, after].map((db) => db.destroy()));
