/**
 * Purge under load: does deleting a million expired tasks slow down `startTask` for everyone
 * else? Starts the server (`src/main.ts`, ROLE=api) on a database of its own, fills the table
 * with a million expired rows in one INSERT, and keeps `POST /v1/jobs` busy at a modest
 * concurrency while `purgeExpired` — with the Purger's defaults (PURGE_DEFAULTS: batches of
 * 1 000, resting as long as each batch took) — deletes them all.
 *
 * The purge runs in alternating slots (BENCH_SLOT_MS on, as long off) until the backlog is
 * gone, so latency during the purge is compared with latency idle measured interleaved in the
 * same minutes: noise from anything else on the machine falls on both sides alike. Reports
 * p50/p99 idle vs during as ratios; target: p99 during at most 2× idle.
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npx tsx bench/purge.ts
 *
 * Environment: BENCH_ROWS (1 000 000), BENCH_CONCURRENCY (4), BENCH_SLOT_MS (2 000),
 * BENCH_BATCH and BENCH_REST_RATIO (override PURGE_DEFAULTS, to compare). Creates and drops
 * its own database; gives up after BENCH_DEADLINE_MS (240 000).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { Kysely, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import { mintToken } from '../src/auth/mint.js';
import { migrate } from '../src/db/migrate.js';
import type { Database } from '../src/db/types.js';
import { PURGE_DEFAULTS, purgeExpired } from '../src/tasks/purge.js';

const base = process.env.DATABASE_URL;
if (!base) {
  console.error(
    'bench/purge: set DATABASE_URL to a Postgres server (it creates and drops a database of its own)',
  );
  process.exit(2);
}
const envInt = (name: string, fallback: number) =>
  process.env[name] ? Number(process.env[name]) : fallback;
const ROWS = envInt('BENCH_ROWS', 1_000_000);
const CONCURRENCY = envInt('BENCH_CONCURRENCY', 4);
const SLOT_MS = envInt('BENCH_SLOT_MS', 2_000);
const BATCH = envInt('BENCH_BATCH', PURGE_DEFAULTS.batchSize);
const REST_RATIO = envInt('BENCH_REST_RATIO', PURGE_DEFAULTS.restRatio);
const DEADLINE_MS = envInt('BENCH_DEADLINE_MS', 240_000);
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const SECRET = randomBytes(32).toString('hex');

const name = `taskhandle_bench_purge_${process.pid}`;
const dbUrl = new URL(base);
dbUrl.pathname = `/${name}`;

async function admin<T>(run: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: base });
  await client.connect();
  try {
    return await run(client);
  } finally {
    await client.end();
  }
}

function startServer(): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: ROOT,
    env: {
      ...process.env,
      DATABASE_URL: dbUrl.toString(),
      PORT: '0',
      AUTH_JWT_SECRET: SECRET,
      LOG_LEVEL: 'info',
      ROLE: 'api',
      NODE_ENV: 'production',
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    let buffered = '';
    child.once('exit', (code) => reject(new Error(`server exited with ${code}`)));
    child.stdout!.on('data', (chunk: Buffer) => {
      buffered += chunk.toString();
      for (const line of buffered.split('\n')) {
        if (!line.includes('"taskhandle listening"')) continue;
        resolve({ child, url: (JSON.parse(line) as { url: string }).url });
      }
      buffered = buffered.slice(buffered.lastIndexOf('\n') + 1);
    });
  });
}

interface Sample {
  from: number;
  to: number;
}

/** `CONCURRENCY` clients starting tasks back to back until `stop()`; every latency, timestamped. */
function load(url: string, token: string) {
  const samples: Sample[] = [];
  let errors = 0;
  let running = true;
  const body = JSON.stringify({ kind: 'sleep', input: { ms: 0 } });
  const client = async () => {
    while (running) {
      const started = performance.now();
      const res = await fetch(`${url}/v1/jobs`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body,
      });
      await res.arrayBuffer();
      const ended = performance.now();
      if (res.status === 202) samples.push({ from: started, to: ended });
      else errors++;
    }
  };
  const clients = Array.from({ length: CONCURRENCY }, client);
  return {
    samples,
    errors: () => errors,
    stop: async () => {
      running = false;
      await Promise.all(clients);
    },
  };
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

interface Slot {
  from: number;
  to: number;
}

/** Latency of the requests that started and ended within one of `slots` (a request straddling a switch counts nowhere). */
function summarize(samples: Sample[], slots: Slot[]) {
  const ms = samples
    .filter((s) => slots.some((slot) => s.from >= slot.from && s.to < slot.to))
    .map((s) => s.to - s.from)
    .sort((a, b) => a - b);
  const seconds = slots.reduce((sum, slot) => sum + (slot.to - slot.from), 0) / 1000;
  return {
    n: ms.length,
    seconds,
    rps: ms.length / seconds,
    p50: percentile(ms, 50),
    p99: percentile(ms, 99),
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const fmt = (n: number) => n.toFixed(2);

let server: ChildProcess | undefined;
const deadline = setTimeout(() => {
  console.error(`bench/purge: gave up after ${DEADLINE_MS} ms`);
  server?.kill('SIGKILL');
  void admin((c) => c.query(`drop database if exists ${name} with (force)`)).finally(() =>
    process.exit(1),
  );
}, DEADLINE_MS);

try {
  await admin((c) => c.query(`create database ${name}`));
  const db = new Kysely<Database>({
    dialect: new PostgresDialect({
      pool: new pg.Pool({ connectionString: dbUrl.toString(), max: 1 }),
    }),
  });
  try {
    await migrate(db);
    const t = performance.now();
    await sql`
      insert into tasks (id, owner, kind, status, ttl_ms, created_at, last_updated_at, expires_at, poll_interval_ms, max_attempts, timeout_ms)
      select gen_random_uuid(), 'user-' || (i % 1000), 'sleep', 'completed', 60000,
             now() - interval '2 hours' + i * interval '1 millisecond', now() - interval '1 hour',
             now() - interval '1 hour' - (${ROWS}::int - i) * interval '1 millisecond', 1000, 3, 60000
      from generate_series(1, ${ROWS}::int) as i`.execute(db);
    const insertMs = performance.now() - t;
    // A backlog that built up over time would have been vacuumed and analysed by now.
    await sql`vacuum analyze tasks`.execute(db);
    console.log(
      `inserted ${ROWS} expired rows in ${(insertMs / 1000).toFixed(1)} s (one INSERT … generate_series), then vacuum analyze`,
    );

    const started = await startServer();
    server = started.child;
    const token = await mintToken(SECRET, {
      sub: 'bench',
      scopes: ['tasks:read', 'tasks:write'],
      ttl: '1h',
    });
    const generator = load(started.url, token);

    await sleep(3_000); // warm-up: JIT, connection pool, token cache

    const idleSlots: Slot[] = [];
    const purgeSlots: Slot[] = [];
    let deleted = 0;
    for (let done = false; !done; ) {
      const idleFrom = performance.now();
      await sleep(SLOT_MS);
      idleSlots.push({ from: idleFrom, to: performance.now() });

      const slot = new AbortController();
      const timer = setTimeout(() => slot.abort(), SLOT_MS);
      const purgeFrom = performance.now();
      deleted += await purgeExpired(db, {
        batchSize: BATCH,
        restRatio: REST_RATIO,
        signal: slot.signal,
      });
      purgeSlots.push({ from: purgeFrom, to: performance.now() });
      clearTimeout(timer);
      done = !slot.signal.aborted; // a short batch: nothing left
    }
    const afterFrom = performance.now();
    await sleep(SLOT_MS);
    idleSlots.push({ from: afterFrom, to: performance.now() });
    await generator.stop();

    const idle = summarize(generator.samples, idleSlots);
    const during = summarize(generator.samples, purgeSlots);
    const remaining = await db
      .selectFrom('tasks')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .where('expires_at', '<=', sql<Date>`now()`)
      .executeTakeFirstOrThrow();

    console.log(
      `purge: deleted ${deleted} rows in ${during.seconds.toFixed(1)} s of purging, ${purgeSlots.length} slots (${Math.round(deleted / during.seconds)} rows/s, batches of ${BATCH}, rest ratio ${REST_RATIO}); expired rows left: ${remaining.n}`,
    );
    console.log(
      `startTask over HTTP (POST /v1/jobs), ${CONCURRENCY} concurrent clients, ${generator.errors()} errors`,
    );
    console.log('phase          requests   req/s    p50 ms   p99 ms');
    for (const [label, s] of [
      ['idle', idle],
      ['during purge', during],
    ] as const) {
      console.log(
        `${label.padEnd(14)} ${String(s.n).padStart(8)} ${s.rps.toFixed(0).padStart(7)} ${fmt(s.p50).padStart(8)} ${fmt(s.p99).padStart(8)}`,
      );
    }
    const p50Ratio = during.p50 / idle.p50;
    const p99Ratio = during.p99 / idle.p99;
    console.log(
      `ratio during/idle: p50 ${fmt(p50Ratio)}×, p99 ${fmt(p99Ratio)}× (target p99 ≤ 2×: ${p99Ratio <= 2 ? 'met' : 'NOT met'})`,
    );
    console.log(
      JSON.stringify({
        bench: 'purge',
        rows: ROWS,
        deleted,
        batchSize: BATCH,
        restRatio: REST_RATIO,
        concurrency: CONCURRENCY,
        slotMs: SLOT_MS,
        idle,
        during,
        p50Ratio,
        p99Ratio,
      }),
    );
    process.exitCode = deleted === ROWS && Number(remaining.n) === 0 ? 0 : 1;
  } finally {
    server?.kill('SIGTERM');
    if (server && server.exitCode === null)
      await new Promise((resolve) => server!.once('exit', resolve));
    await db.destroy();
  }
} finally {
  await admin((c) => c.query(`drop database if exists ${name} with (force)`));
  clearTimeout(deadline);
}
