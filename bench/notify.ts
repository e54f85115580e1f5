import pg from 'pg';
import { recreateMigratedDatabase } from '../test/helpers/migrated-database.js';
import { BASE_URL, DB_NAME, databaseUrl, fmt, out, pool, targets, verdict } from './common.js';
import { compareFleets, type Fleet, startFleet, stopFleet } from './fleet.js';

/**
 * What the notify lock costs accept: 4 api processes × 16 clients starting no-op tasks, once
 * as shipped and once on a twin database where `pg_notify` does nothing. The twin puts a schema
 * with a no-op `pg_notify(text, text)` ahead of `pg_catalog` in its search_path, so the servers
 * run the very same code and statements; only the notification (and the notify queue's lock,
 * held by each notifying transaction through its commit's WAL flush) is gone.
 */

const PROCESSES = 4;
const CLIENTS_PER_PROCESS = 16;
const QUIET = `${DB_NAME}_quiet`;

/** Makes `pg_notify` a no-op on the database of `url`, for sessions that connect afterwards. */
async function silence(url: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(`create schema bench_quiet`);
    await client.query(
      `create function bench_quiet.pg_notify(text, text) returns void language sql as 'select'`,
    );
    await client.query(`alter database ${QUIET} set search_path = bench_quiet, pg_catalog, public`);
  } finally {
    await client.end();
  }
  // Proof for the reader of the figures: a new session on it notifies nobody.
  const check = new pg.Client({ connectionString: url });
  await check.connect();
  try {
    const { rows } = await check.query<{ schema: string }>(
      `select n.nspname as schema from pg_proc p join pg_namespace n on n.oid = p.pronamespace
        where p.oid = 'pg_notify(text, text)'::regprocedure`,
    );
    if (rows[0]?.schema !== 'bench_quiet')
      throw new Error(`pg_notify on ${QUIET} resolves to ${rows[0]?.schema}.pg_notify`);
  } finally {
    await check.end();
  }
}

export async function notify(token: string): Promise<void> {
  out(
    `## accept with and without NOTIFY: ${PROCESSES} api processes × ${CLIENTS_PER_PROCESS} clients starting no-op tasks`,
  );
  out();
  const fleets: Fleet[] = [];
  try {
    const quietUrl = await recreateMigratedDatabase(BASE_URL, QUIET);
    await silence(quietUrl);
    const shipped = await startFleet('notify-shipped', PROCESSES, databaseUrl, {});
    fleets.push(shipped);
    const quiet = await startFleet('notify-quiet', PROCESSES, quietUrl, {});
    fleets.push(quiet);
    const get = await compareFleets(token, CLIENTS_PER_PROCESS, [
      ['as shipped', shipped],
      ['no NOTIFY', quiet],
    ]);
    const base = get('no NOTIFY');
    out(
      '| statements | accepted/s | slowest process p50 ms | slowest process p99 ms | vs no NOTIFY |',
    );
    out('| --- | ---: | ---: | ---: | ---: |');
    for (const name of ['no NOTIFY', 'as shipped']) {
      const r = get(name);
      out(
        `| ${name} | ${fmt(r.perSecond)} | ${fmt(r.p50Ms, 2)} | ${fmt(r.p99Ms, 2)} | ${(r.perSecond / base.perSecond).toFixed(2)}× |`,
      );
    }
    out();
    out(
      `Each process: ROLE=api, its default pool; ${CLIENTS_PER_PROCESS} clients on each post \`startTask\` (GraphQL over HTTP). "no NOTIFY" runs the same servers on a twin database whose search_path resolves \`pg_notify\` to a no-op function (\`bench_quiet.pg_notify\`), so the statements are the same and nothing is notified.`,
    );
    out();
    const r = get('as shipped').perSecond / base.perSecond;
    targets.push(
      `| accept, ${PROCESSES} processes × ${CLIENTS_PER_PROCESS} clients, with NOTIFY as shipped ≥ 0.9× the same inserts without NOTIFY | ${r.toFixed(2)}× (${fmt(get('as shipped').perSecond)} vs ${fmt(base.perSecond)}/s) | ${verdict(r >= 0.9)} |`,
    );
  } finally {
    await Promise.all(fleets.map(stopFleet));
    await pool.query(`drop database if exists ${QUIET} with (force)`);
  }
}
