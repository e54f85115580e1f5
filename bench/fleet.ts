import pg from 'pg';
import { alternate, DURATION_MS, START, server, WARMUP_MS } from './common.js';
import { type LoadResult, load } from './load.js';
import type { Child } from './processes.js';

/**
 * A fleet of ROLE=api processes on one database, loaded together with `startTask`: the
 * multi-process accept rows (through PgBouncer, with and without NOTIFY) are measured so.
 */
export interface Fleet {
  processes: Child[];
  /** A direct pool on its database: truncating, counting backends. */
  admin: pg.Pool;
}

export interface FleetRound extends LoadResult {
  /** The most backends its database had at once in the window (listeners included). */
  backends: number;
}

/**
 * Starts the processes one after another: on a busy machine several loaders at once outlast
 * the start timeout. They live through every round of their configuration.
 */
export async function startFleet(
  name: string,
  size: number,
  url: string,
  env: Record<string, string>,
): Promise<Fleet> {
  const processes: Child[] = [];
  const admin = new pg.Pool({ connectionString: url, max: 2 });
  try {
    for (let i = 0; i < size; i++)
      processes.push(await server(`${name}-${i}`, { ROLE: 'api', DATABASE_URL: url, ...env }));
  } catch (err) {
    await stopFleet({ processes, admin });
    throw err;
  }
  return { processes, admin };
}

export async function stopFleet({ processes, admin }: Fleet): Promise<void> {
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
      // The sampling connection itself is not the fleet's.
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

/** `clients` clients on every process post `startTask` (no-op kind) for one measured window. */
export async function fleetRound(
  { processes, admin }: Fleet,
  token: string,
  clients: number,
): Promise<FleetRound> {
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
        concurrency: clients,
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

/** Loads the fleets in turn (alternate's rounds); gives each one's better round by name. */
export async function compareFleets(
  token: string,
  clients: number,
  fleets: Array<[string, Fleet]>,
): Promise<(name: string) => FleetRound> {
  const runs = await alternate(
    fleets.map(([name, fleet]) => [name, () => fleetRound(fleet, token, clients)]),
  );
  return (name) => runs.get(name) as FleetRound;
}
