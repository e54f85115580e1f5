import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { recreateMigratedDatabase } from '../test/helpers/migrated-database.js';
import {
  alternate,
  BASE_URL,
  DB_NAME,
  DURATION_MS,
  databaseUrl,
  fmt,
  out,
  pool,
  START,
  server,
  targets,
  verdict,
  WARMUP_MS,
} from './common.js';
import { type LoadResult, load } from './load.js';
import { type Child, ROOT } from './processes.js';

/**
 * Accept through PgBouncer in transaction mode: 8 api processes whose pools (10 each) share
 * 20 server connections, against the same 8 processes connected directly (8 × 10). Debian's
 * pgbouncer, started by .ci/pgbouncer as CI starts it, on a free loopback port.
 */

const PROCESSES = 8;
/** Clients per process: enough to keep every one of its 10 pooled connections busy. */
const CLIENTS_PER_PROCESS = 10;
const SERVER_CONNECTIONS = 20;

interface Round extends LoadResult {
  /** The most backends its database had at once in the window (listeners included). */
  backends: number;
}

/** One configuration's processes, on a database of its own (no NOTIFY reaches the other's). */
interface Contender {
  processes: Child[];
  /** A direct pool on its database: truncating, counting backends. */
  admin: pg.Pool;
}

/**
 * Starts the 8 processes one after another: on a busy machine several loaders at once outlast
 * the start timeout. They live through every round of their configuration.
 */
async function contender(
  name: string,
  url: string,
  env: Record<string, string>,
): Promise<Contender> {
  const processes: Child[] = [];
  const admin = new pg.Pool({ connectionString: url, max: 2 });
  try {
    for (let i = 0; i < PROCESSES; i++)
      processes.push(
        await server(`pooler-${name}-${i}`, { ROLE: 'api', DATABASE_URL: url, ...env }),
      );
  } catch (err) {
    await stopContender({ processes, admin });
    throw err;
  }
  return { processes, admin };
}

async function stopContender({ processes, admin }: Contender): Promise<void> {
  await Promise.all(processes.map((p) => p.stop()));
  await admin.end();
}

/** The peak count of the database's backends, sampled until stopped. */
function countBackends(admin: pg.Pool): { stop(): Promise<number> } {
  let peak = 0;
  let running = true;
  const loop = (async () => {
    while (running) {
      const { rows } = await admin.query<{ n: number }>(
        `select count(*)::int as n from pg_stat_activity
          where datname = current_database() and pid <> pg_backend_pid()`,
      );
      // The sampling connection itself is not the contender's.
      peak = Math.max(peak, rows[0]!.n - (admin.totalCount - 1));
      await new Promise((r) => setTimeout(r, 50));
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return peak;
    },
  };
}

async function round({ processes, admin }: Contender, token: string): Promise<Round> {
  await admin.query('truncate tasks, task_webhooks, task_deliveries');
  const body = JSON.stringify({ query: START, variables: { input: { kind: 'noop', input: {} } } });
  const backends = countBackends(admin);
  const results = await Promise.all(
    processes.map((p) =>
      load({
        url: `${p.url}/graphql`,
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
        body,
        concurrency: CLIENTS_PER_PROCESS,
        warmupMs: WARMUP_MS,
        durationMs: DURATION_MS,
        check: (status, text) => status === 200 && !text.includes('"errors"'),
      }),
    ),
  );
  return {
    requests: results.reduce((sum, r) => sum + r.requests, 0),
    errors: results.reduce((sum, r) => sum + r.errors, 0),
    perSecond: results.reduce((sum, r) => sum + r.perSecond, 0),
    // The slowest process's median and tail: one figure per round.
    p50Ms: Math.max(...results.map((r) => r.p50Ms)),
    p99Ms: Math.max(...results.map((r) => r.p99Ms)),
    backends: await backends.stop(),
  };
}

export async function pooler(token: string): Promise<void> {
  const clients = PROCESSES * CLIENTS_PER_PROCESS;
  out(`## through PgBouncer: ${PROCESSES} api processes, ${clients} clients starting no-op tasks`);
  out();
  const dir = mkdtempSync(join(tmpdir(), 'taskhandle-pgbouncer-'));
  chmodSync(dir, 0o755);
  const script = join(ROOT, '.ci', 'pgbouncer');
  const port = execFileSync(script, ['start', dir, String(SERVER_CONNECTIONS)], {
    encoding: 'utf8',
  }).trim();
  const contenders: Contender[] = [];
  try {
    // The pooled processes' database: a twin of the benchmark's, made the same way.
    const twinUrl = await recreateMigratedDatabase(BASE_URL, `${DB_NAME}_pooled`);
    const pooled = new URL(twinUrl);
    pooled.host = `127.0.0.1:${port}`;
    const direct = await contender('direct', databaseUrl, {});
    contenders.push(direct);
    const viaPooler = await contender('pgbouncer', pooled.toString(), {
      DATABASE_LISTEN_URL: twinUrl,
      DB_PREPARED_STATEMENTS: 'false',
    });
    contenders.push(viaPooler);
    const runs = await alternate([
      ['direct', () => round(direct, token)],
      ['pgbouncer', () => round(viaPooler, token)],
    ]);
    const get = (name: string) => runs.get(name) as Round;
    const base = get('direct');
    out(
      '| connections | accepted/s | slowest process p50 ms | slowest process p99 ms | peak backends | vs direct |',
    );
    out('| --- | ---: | ---: | ---: | ---: | ---: |');
    const line = (label: string, r: Round) =>
      out(
        `| ${label} | ${fmt(r.perSecond)} | ${fmt(r.p50Ms, 2)} | ${fmt(r.p99Ms, 2)} | ${r.backends} | ${(r.perSecond / base.perSecond).toFixed(2)}× |`,
      );
    line(`direct: ${PROCESSES} pools of 10`, base);
    line(
      `PgBouncer (transaction mode), ${SERVER_CONNECTIONS} server connections; LISTEN direct; DB_PREPARED_STATEMENTS=false`,
      get('pgbouncer'),
    );
    out();
    out(
      `Each process: ROLE=api, a pool of 10 (to PgBouncer or to Postgres) and one direct LISTEN connection; ${CLIENTS_PER_PROCESS} clients on each post \`startTask\` (GraphQL over HTTP). Each configuration runs on a database of its own, so no process hears the other's NOTIFYs. Peak backends: pg_stat_activity of that database sampled every 50 ms, the ${PROCESSES} listening connections included. PgBouncer: Debian's ${pgbouncerVersion()}, \`pool_mode = transaction\`, \`default_pool_size = ${SERVER_CONNECTIONS}\`, started by \`.ci/pgbouncer start\`.`,
    );
    out();
    const r = get('pgbouncer').perSecond / base.perSecond;
    targets.push(
      `| through PgBouncer, ${PROCESSES} processes, ${SERVER_CONNECTIONS} server connections: accept ≥ 0.8× direct with ${PROCESSES} × 10 | ${r.toFixed(2)}× (${fmt(get('pgbouncer').perSecond)} vs ${fmt(base.perSecond)}/s) | ${verdict(r >= 0.8)} |`,
    );
  } finally {
    await Promise.all(contenders.map(stopContender));
    execFileSync(script, ['stop', dir]);
    await pool.query(`drop database if exists ${DB_NAME}_pooled with (force)`);
    rmSync(dir, { recursive: true, force: true });
  }
}

function pgbouncerVersion(): string {
  return execFileSync('pgbouncer', ['--version'], { encoding: 'utf8' }).split('\n')[0]!.trim();
}
