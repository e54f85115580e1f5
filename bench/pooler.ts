import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { recreateMigratedDatabase } from '../test/helpers/migrated-database.js';
import { BASE_URL, DB_NAME, databaseUrl, fmt, out, pool, targets, verdict } from './common.js';
import { compareFleets, type Fleet, type FleetRound, startFleet, stopFleet } from './fleet.js';
import { ROOT } from './processes.js';

/**
 * Accept through PgBouncer in transaction mode: 8 api processes whose pools (10 each) share
 * 20 server connections, against the same 8 processes connected directly (8 × 10). Debian's
 * pgbouncer, started by .ci/pgbouncer as CI starts it, on a free loopback port.
 *
 * BENCH_PGBOUNCER_PREPARED names the binary of a PgBouncer of 1.21 or later, which keeps
 * prepared statements in transaction mode: the same fleet then also runs through it with the
 * app's named statements on (DB_PREPARED_STATEMENTS=true, `max_prepared_statements = 200`).
 * Debian bookworm ships 1.18; trixie's source package builds on bookworm:
 * `apt-get source pgbouncer` (a `deb-src` line for trixie), then in its directory
 * `./configure --prefix=/opt/pgbouncer --without-systemd && make && make install`
 * (build dependencies: libevent-dev, libssl-dev, libc-ares-dev).
 */

const PREPARED_PGBOUNCER = process.env.BENCH_PGBOUNCER_PREPARED;

const PROCESSES = 8;
/** Clients per process: enough to keep every one of its 10 pooled connections busy. */
const CLIENTS_PER_PROCESS = 10;
const SERVER_CONNECTIONS = 20;

export async function pooler(token: string): Promise<void> {
  const clients = PROCESSES * CLIENTS_PER_PROCESS;
  out(`## through PgBouncer: ${PROCESSES} api processes, ${clients} clients starting no-op tasks`);
  out();
  const dirs: string[] = [];
  /** Starts a PgBouncer (`binary`, else Debian's) as CI does; its port. */
  const startPooler = (binary?: string) => {
    const dir = mkdtempSync(join(tmpdir(), 'taskhandle-pgbouncer-'));
    chmodSync(dir, 0o755);
    dirs.push(dir);
    const env = binary ? { ...process.env, PGBOUNCER: binary } : process.env;
    return execFileSync(SCRIPT, ['start', dir, String(SERVER_CONNECTIONS)], {
      encoding: 'utf8',
      env,
    }).trim();
  };
  const contenders: Fleet[] = [];
  try {
    const port = startPooler();
    // The pooled processes' database: a twin of the benchmark's, made the same way.
    const twinUrl = await recreateMigratedDatabase(BASE_URL, `${DB_NAME}_pooled`);
    const pooled = new URL(twinUrl);
    pooled.host = `127.0.0.1:${port}`;
    const direct = await startFleet('pooler-direct', PROCESSES, databaseUrl, {});
    contenders.push(direct);
    // What the pooler's row costs apart from its hop: every statement parsed and planned anew.
    const unpreparedUrl = await recreateMigratedDatabase(BASE_URL, `${DB_NAME}_unprepared`);
    const unprepared = await startFleet('pooler-unprepared', PROCESSES, unpreparedUrl, {
      DB_PREPARED_STATEMENTS: 'false',
    });
    contenders.push(unprepared);
    const viaPooler = await startFleet('pooler-pgbouncer', PROCESSES, pooled.toString(), {
      DATABASE_LISTEN_URL: twinUrl,
      DB_PREPARED_STATEMENTS: 'false',
    });
    contenders.push(viaPooler);
    const fleets: Array<[string, Fleet]> = [
      ['direct', direct],
      ['unprepared', unprepared],
      ['pgbouncer', viaPooler],
    ];
    if (PREPARED_PGBOUNCER) {
      const url = await recreateMigratedDatabase(BASE_URL, `${DB_NAME}_pooled_prepared`);
      const through = new URL(url);
      through.host = `127.0.0.1:${startPooler(PREPARED_PGBOUNCER)}`;
      const viaPrepared = await startFleet('pooler-prepared', PROCESSES, through.toString(), {
        DATABASE_LISTEN_URL: url,
        DB_PREPARED_STATEMENTS: 'true',
      });
      contenders.push(viaPrepared);
      fleets.push(['prepared', viaPrepared]);
    }
    const get = await compareFleets(token, CLIENTS_PER_PROCESS, fleets);
    const base = get('direct');
    out(
      '| connections | accepted/s | slowest process p50 ms | slowest process p99 ms | peak backends | vs direct |',
    );
    out('| --- | ---: | ---: | ---: | ---: | ---: |');
    const line = (label: string, r: FleetRound) =>
      out(
        `| ${label} | ${fmt(r.perSecond)} | ${fmt(r.p50Ms, 2)} | ${fmt(r.p99Ms, 2)} | ${r.backends} | ${(r.perSecond / base.perSecond).toFixed(2)}× |`,
      );
    line(`direct: ${PROCESSES} pools of 10`, base);
    line(`direct: ${PROCESSES} pools of 10, DB_PREPARED_STATEMENTS=false`, get('unprepared'));
    line(
      `PgBouncer (transaction mode), ${SERVER_CONNECTIONS} server connections; LISTEN direct; DB_PREPARED_STATEMENTS=false`,
      get('pgbouncer'),
    );
    if (PREPARED_PGBOUNCER)
      line(
        `${pgbouncerVersion(PREPARED_PGBOUNCER)} (transaction mode, \`max_prepared_statements = 200\`), ${SERVER_CONNECTIONS} server connections; LISTEN direct; DB_PREPARED_STATEMENTS=true`,
        get('prepared'),
      );
    out();
    out(
      `Each process: ROLE=api, a pool of 10 (to PgBouncer or to Postgres) and one direct LISTEN connection; ${CLIENTS_PER_PROCESS} clients on each post \`startTask\` (GraphQL over HTTP). Each configuration runs on a database of its own, so no process hears another's NOTIFYs. The middle row is the direct fleet with the pooler's setting and no pooler: the step from the first row to it is the cost of statements parsed and planned on every execution, the step from it to the last the cost of PgBouncer's hop (a process of its own on the same two cores). Peak backends: pg_stat_activity of that database sampled every 50 ms, the ${PROCESSES} listening connections included. PgBouncer: Debian's ${pgbouncerVersion()}, \`pool_mode = transaction\`, \`default_pool_size = ${SERVER_CONNECTIONS}\`, started by \`.ci/pgbouncer start\`${PREPARED_PGBOUNCER ? `; the last row's built from Debian trixie's source (see bench/pooler.ts), started the same way` : ''}.`,
    );
    out();
    const r = get('pgbouncer').perSecond / base.perSecond;
    targets.push(
      `| through PgBouncer, ${PROCESSES} processes, ${SERVER_CONNECTIONS} server connections: accept ≥ 0.8× direct with ${PROCESSES} × 10 | ${r.toFixed(2)}× (${fmt(get('pgbouncer').perSecond)} vs ${fmt(base.perSecond)}/s; Debian's ${pgbouncerVersion()}, no prepared statements; the direct fleet with none, and no PgBouncer, ${(get('unprepared').perSecond / base.perSecond).toFixed(2)}×) | ${verdict(r >= 0.8)} |`,
    );
    if (PREPARED_PGBOUNCER) {
      const p = get('prepared').perSecond / base.perSecond;
      targets.push(
        `| the same through ${pgbouncerVersion(PREPARED_PGBOUNCER)}, prepared statements kept | ${p.toFixed(2)}× (${fmt(get('prepared').perSecond)}/s) | ${verdict(p >= 0.8)} |`,
      );
    }
  } finally {
    await Promise.all(contenders.map(stopFleet));
    for (const dir of dirs) {
      execFileSync(SCRIPT, ['stop', dir]);
      rmSync(dir, { recursive: true, force: true });
    }
    for (const db of ['pooled', 'unprepared', 'pooled_prepared'])
      await pool.query(`drop database if exists ${DB_NAME}_${db} with (force)`);
  }
}

const SCRIPT = join(ROOT, '.ci', 'pgbouncer');

function pgbouncerVersion(binary = 'pgbouncer'): string {
  return execFileSync(binary, ['--version'], { encoding: 'utf8' }).split('\n')[0]!.trim();
}
