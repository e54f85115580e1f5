/**
 * `npx tsx bench/pool-layers.ts`: what each layer between a statement and Postgres adds to one
 * bare INSERT commit, one at a time (latency, as a step or an accept waits for it): a raw pg
 * client, a pg pool with the process's client settings (src/db/pg-pool.ts `clientConfig`), the
 * guarded pool (fault classification, prepared by name), the breaker around it
 * (src/db/breaker.ts), and kysely over that, which is the path every statement of the app
 * takes. Rounds alternate the layers, so a burst of load on the shared machine hits them all;
 * medians of 9 rounds of 200 commits. Not part of `npm run bench`: a diagnosis for the steps
 * row and the accept rows.
 */
import { Kysely, PostgresDialect, type PostgresPool, sql } from 'kysely';
import pg from 'pg';
import pino from 'pino';
import { DatabaseBreaker, DatabaseProbe } from '../src/db/breaker.js';
import { clientConfig, guardedPool, PREPARED, prepared } from '../src/db/pg-pool.js';
import { recreateMigratedDatabase } from '../test/helpers/migrated-database.js';
import { BASE_URL, fmt } from './common.js';
import { median } from './load.js';

const ROUNDS = 9;
const COMMITS = 200;

const url = await recreateMigratedDatabase(BASE_URL, 'taskhandle_bench_pool_layers');
const log = pino({ level: 'warn' });
const timeouts = { statementTimeoutMs: 30_000, connectTimeoutMs: 5_000 };
const guarded = () => guardedPool(url, { ...timeouts, max: 2, preparedStatements: true, log }).pool;
const breaker = new DatabaseBreaker(new DatabaseProbe(url), log);

const raw = new pg.Client({ connectionString: url });
await raw.connect();
await raw.query('create table bench_floor (id serial primary key, v int)');
const settled = new pg.Pool({ ...clientConfig(url, timeouts), max: 2 });
const guardedOnly = guarded();
const behindBreaker = breaker.guard(guarded());
const kysely = new Kysely<unknown>({
  dialect: new PostgresDialect({ pool: breaker.guard(guarded()) }),
});

const TEXT = `${PREPARED} insert into bench_floor (v) values ($1)`;
/** A commit sent by `send` on a connection checked out by `connect`, released after. */
const throughPool =
  <C extends { release(): void }>(
    connect: () => Promise<C>,
    send: (client: C, i: number) => Promise<unknown>,
  ) =>
  async (i: number) => {
    const client = await connect();
    try {
      await send(client, i);
    } finally {
      client.release();
    }
  };
const named = (i: number) => ({ name: 'ins', text: TEXT, values: [i] });
/** As text: the guarded pools name a marked statement themselves. */
const marked = (pool: PostgresPool) =>
  throughPool(
    () => pool.connect(),
    (client, i) => client.query(TEXT, [i]),
  );
const layers: Array<[string, (i: number) => Promise<unknown>]> = [
  ['raw pg client, prepared by name', (i) => raw.query(named(i))],
  [
    "pg pool with the process's client settings",
    throughPool(
      () => settled.connect(),
      (client, i) => client.query(named(i)),
    ),
  ],
  ['the guarded pool (src/db/pg-pool.ts)', marked(guardedOnly)],
  ['the breaker around it (src/db/breaker.ts)', marked(behindBreaker)],
  [
    'kysely over that: the app’s path',
    (i) => sql`${prepared} insert into bench_floor (v) values (${i})`.execute(kysely),
  ],
];

const times = new Map<string, number[]>();
for (let round = 0; round < ROUNDS; round++)
  for (const [name, commit] of layers) {
    const t0 = performance.now();
    for (let i = 0; i < COMMITS; i++) await commit(i);
    times.set(name, [...(times.get(name) ?? []), (performance.now() - t0) / COMMITS]);
  }

const base = median(times.get(layers[0]![0])!);
console.log('| layer | ms a commit (median) | vs raw client |');
console.log('| --- | ---: | ---: |');
for (const [name] of layers) {
  const ms = median(times.get(name)!);
  console.log(`| ${name} | ${fmt(ms, 3)} | ${(ms / base).toFixed(2)}× |`);
}
await raw.end();
await Promise.all([settled.end(), kysely.destroy(), guardedOnly.end(), behindBreaker.end()]);
process.exit(0);
