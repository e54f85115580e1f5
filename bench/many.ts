/**
 * Many tasks at once (DESIGN §15), two rows:
 *
 * - startTasks of 100 against 100 startTask calls, one client, one after another, over HTTP
 *   GraphQL on an in-process app (ROLE=api: nothing runs the tasks): tasks a second.
 * - A filtered page of 20 (by label, by kind, by two statuses, unfiltered) for an owner with
 *   BENCH_BIG (1 000 000) tasks against one with BENCH_SMALL (1 000), the rows written in one
 *   INSERT each, with the same mix of kinds, statuses and labels: median ms of the list query
 *   as the service runs it, and the ratio big/small (target: at most 2×).
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npx tsx bench/many.ts
 *
 * Creates and drops a database of its own.
 */
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { createApp } from '../src/app.js';
import { mintToken } from '../src/auth/mint.js';
import { loadConfig } from '../src/config/config.js';
import { checkFilter, type TaskFilter } from '../src/tasks/filter.js';
import { listTasks } from '../src/tasks/sql/list.js';

const base = process.env.DATABASE_URL;
if (!base) {
  console.error('bench/many: set DATABASE_URL to a Postgres server');
  process.exit(2);
}
const BIG = Number(process.env.BENCH_BIG ?? 1_000_000);
const SMALL = Number(process.env.BENCH_SMALL ?? 1_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 10);
const SECRET = 'taskhandle-bench-secret-0123456789abcdef0123';

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;

async function main() {
  const name = `taskhandle_many_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: base });
  await admin.connect();
  await admin.query(`create database ${name}`);
  const url = new URL(base as string);
  url.pathname = `/${name}`;
  const app = await createApp({
    config: loadConfig({
      NODE_ENV: 'production',
      AUTH_JWT_SECRET: SECRET,
      PORT: '0',
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      ROLE: 'api',
      DATABASE_URL: url.toString(),
    }),
  });
  try {
    const endpoint = `${await app.listen()}/graphql`;
    const token = await mintToken(SECRET, {
      sub: 'bench',
      scopes: ['tasks:read', 'tasks:write'],
      ttl: '1h',
    });
    const gql = async (query: string, variables: unknown) => {
      const res = await fetch(endpoint, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
        body: JSON.stringify({ query, variables }),
      });
      const body = (await res.json()) as { errors?: unknown };
      if (body.errors) throw new Error(JSON.stringify(body.errors));
    };
    const input = (i: number) => ({ kind: 'sleep', input: { ms: 1 }, labels: { n: String(i) } });
    const START = 'mutation($input: StartTaskInput!) { startTask(input: $input) { id } }';
    const MANY = 'mutation($inputs: [StartTaskInput!]!) { startTasks(inputs: $inputs) { id } }';
    const one: number[] = [];
    const many: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      let at = performance.now();
      for (let i = 0; i < 100; i++) await gql(START, { input: input(i) });
      one.push(100_000 / (performance.now() - at));
      at = performance.now();
      await gql(MANY, { inputs: Array.from({ length: 100 }, (_, i) => input(i)) });
      many.push(100_000 / (performance.now() - at));
    }
    console.log('| start 100 tasks | tasks/s (median of %d) |', ROUNDS);
    console.log('| --- | ---: |');
    console.log(`| 100 × startTask | ${median(one).toFixed(0)} |`);
    console.log(`| 1 × startTasks(100) | ${median(many).toFixed(0)} |`);
    console.log(`| ratio | ${(median(many) / median(one)).toFixed(1)}× |`);

    // The owners' rows: kinds a/b/c, statuses cycling, a label `team` of 10 values and a
    // label `batch` of 100, one creation instant a millisecond apart.
    const db = app.db.kysely;
    // Written on a connection of its own: the app's pool holds each query to DB_QUERY_TIMEOUT.
    const writer = new pg.Client({ connectionString: url.toString() });
    await writer.connect();
    for (const [owner, n] of [
      ['big', BIG],
      ['small', SMALL],
    ] as const) {
      const at = performance.now();
      await writer.query(
        `with t as (
          insert into tasks (id, owner, kind, status, input, ttl_ms, expires_at, poll_interval_ms,
                             max_attempts, timeout_ms, labels, created_at, last_updated_at)
          select gen_random_uuid(), $1, (array['a','b','c'])[1 + i % 3],
                 (array['working','input_required','completed','cancelled','failed'])[1 + i % 5],
                 '{}', 86400000, now() + interval '1 day', 1000, 1, 60000,
                 jsonb_build_object('team', (i % 10)::text, 'batch', (i % 100)::text),
                 now() - ($2::int - i) * interval '1 millisecond', now()
          from generate_series(1, $2::int) i
          returning id, owner, labels, created_at
        )
        insert into task_labels (owner, key, value, created_at, task_id)
        select t.owner, e.key, e.value, t.created_at, t.id from t, jsonb_each_text(t.labels) e`,
        [owner, n],
      );
      console.error(
        `bench/many: ${n} tasks of ${owner} written in ${((performance.now() - at) / 1000).toFixed(1)} s`,
      );
    }
    await writer.query('analyze');
    await writer.end();
    const filters: Array<[string, TaskFilter]> = [
      ['no filter', {}],
      ['label team=3', { labels: { team: '3' } }],
      ['label batch=42', { labels: { batch: '42' } }],
      ['kind b', { kinds: ['b'] }],
      ['status failed, cancelled', { statuses: ['failed', 'cancelled'] }],
      [
        'label team=3, kind b, status failed',
        { labels: { team: '3' }, kinds: ['b'], statuses: ['failed'] },
      ],
    ];
    console.log('\n| filtered page of 20 | %d tasks (ms) | %d tasks (ms) | ratio |', SMALL, BIG);
    console.log('| --- | ---: | ---: | ---: |');
    for (const [label, filter] of filters) {
      const checked = checkFilter(filter);
      const time = async (owner: string) => {
        const samples: number[] = [];
        for (let i = 0; i < 50; i++) {
          const at = performance.now();
          await listTasks(db, { owner, filter: checked, first: 20 });
          samples.push(performance.now() - at);
        }
        return median(samples);
      };
      // Interleaved, so that noise from the rest of the machine falls on both alike.
      const small: number[] = [];
      const big: number[] = [];
      for (let i = 0; i < 5; i++) {
        small.push(await time('small'));
        big.push(await time('big'));
      }
      const s = median(small);
      const b = median(big);
      console.log(`| ${label} | ${s.toFixed(3)} | ${b.toFixed(3)} | ${(b / s).toFixed(2)}× |`);
    }
  } finally {
    await app.stop();
    await admin.query(`drop database if exists ${name} with (force)`);
    await admin.end();
  }
}

await main();
