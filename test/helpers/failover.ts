import { once } from 'node:events';
import pg from 'pg';
import { expect } from 'vitest';
import { eventually } from './app.js';
import type { Load } from './failover-load.js';
import { type ServerProcess, spawnServer } from './process.js';
import { type ReplicatedPostgres, startReplicatedPostgres } from './replicated-postgres.js';
import { readWriteToken } from './secret.js';
import { proxyFor, type TcpProxy } from './tcp-proxy.js';

/**
 * A Postgres failover as production sees it: a primary and its streaming standby behind a
 * TCP proxy that stands for the database's DNS name, and three server processes (api,
 * worker, all) on that name, under a steady load of starts and reads on every face.
 */
export interface FailoverRig {
  readonly pg: ReplicatedPostgres;
  /** The database's name: `retarget` moves it. */
  readonly proxy: TcpProxy;
  readonly servers: { api: ServerProcess; worker: ServerProcess; all: ServerProcess };
  readonly token: string;
  stop(): Promise<void>;
}

/** A short lease, so that leases lapse within a failover's read-only window. */
export const FAILOVER_LEASE_MS = 3_000;

/** Starts the clusters, the proxy (on the primary) and the processes; undoes it all on failure. */
export async function startFailoverRig(synchronous: boolean): Promise<FailoverRig> {
  const pg = await startReplicatedPostgres({ synchronous });
  let proxy: TcpProxy | undefined;
  const started: ServerProcess[] = [];
  const stop = async () => {
    await Promise.all(started.map((s) => s.stop('SIGKILL')));
    await proxy?.close();
    await pg.stop();
  };
  try {
    proxy = await proxyFor(pg.primaryUrl);
    const databaseUrl = proxy.via(pg.primaryUrl);
    const env = {
      TASK_LEASE_MS: String(FAILOVER_LEASE_MS),
      LOG_LEVEL: 'info',
      // These clusters have no pooler, whatever the run's own database has.
      DATABASE_LISTEN_URL: databaseUrl,
    };
    const spawned = await Promise.allSettled(
      (['api', 'worker', 'all'] as const).map((role) => spawnServer({ role, databaseUrl, env })),
    );
    for (const s of spawned) if (s.status === 'fulfilled') started.push(s.value);
    const failed = spawned.find((s) => s.status === 'rejected');
    if (failed) throw failed.reason;
    const [api, worker, all] = started as [ServerProcess, ServerProcess, ServerProcess];
    return { pg, proxy, servers: { api, worker, all }, token: await readWriteToken(), stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

/**
 * Resolves once `server` has logged a line `matches` accepts, from line `from` on; rejects
 * after `timeoutMs`.
 */
export async function untilLogged(
  server: ServerProcess,
  matches: (line: Record<string, any>) => boolean,
  from = 0,
  timeoutMs = 60_000,
): Promise<void> {
  const signal = AbortSignal.timeout(timeoutMs);
  while (!server.logs().slice(from).some(matches))
    await once(server.child.stdout!, 'data', { signal }).catch((err: unknown) => {
      throw new Error(`${server.role} did not log what was awaited within ${timeoutMs} ms`, {
        cause: err,
      });
    });
}

/**
 * Waits into a read-only window that began at answer `since` of `load` and at log line
 * `logsFrom[i]` of process i: 40 answers sent in it, none but a success or SERVICE_UNAVAILABLE
 * (checked then, so that an INTERNAL_SERVER_ERROR fails at once), then each process (the
 * worker, which serves no request, too) logging that the database is read-only.
 */
export async function intoReadOnlyWindow(
  rig: FailoverRig,
  load: Load,
  since: number,
  logsFrom: readonly number[],
): Promise<void> {
  await load.until(() => load.answers.length - since >= 40);
  expect(load.answers.slice(since).filter((a) => a.outcome === 'other')).toEqual([]);
  await Promise.all(
    Object.values(rig.servers).map((s, i) =>
      untilLogged(s, (l) => l.msg.startsWith('database read-only'), logsFrom[i]),
    ),
  );
}

/** Resolves once the process at `url` answers /readyz with 200 (polled: it has no event). */
export async function untilReady(url: string): Promise<void> {
  await eventually(
    async () => ((await fetch(`${url}/readyz`)).status === 200 ? true : undefined),
    60_000,
    50,
  );
}

/**
 * For each process, how long after `since` (epoch ms) it first logged `msg`, per its own
 * clock (pino's `time`); `-` when it has not.
 */
export function loggedAfter(rig: FailoverRig, msg: string, since: number): string {
  return Object.values(rig.servers)
    .map((s) => {
      const line = s.logs().find((l) => l.msg === msg && l.time >= since);
      return `${s.role} ${line ? `${line.time - since} ms` : '-'}`;
    })
    .join(', ');
}

/** The log lines of `server` at warn or above from line `from` on, by message, with a count. */
export function warnings(server: ServerProcess, from = 0): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const l of server.logs().slice(from))
    if (l.level >= 40) counts[l.msg] = (counts[l.msg] ?? 0) + 1;
  return counts;
}

export interface StoredTask {
  id: string;
  status: string;
  attempt: number;
}

/**
 * The tasks `ids` as the database at `url` holds them, once none is still running or queued
 * (or after 60 s): the ones it does not hold are lost.
 */
export async function settledTasks(url: string, ids: readonly string[]): Promise<StoredTask[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const read = async () =>
    (
      await client.query<StoredTask>(
        'select id::text, status, attempt from tasks where id = any($1::uuid[])',
        [ids],
      )
    ).rows;
  try {
    return await eventually(
      async () => {
        const rows = await read();
        return rows.every((r) => r.status !== 'working') ? rows : undefined;
      },
      60_000,
      100,
    ).catch(read);
  } finally {
    await client.end();
  }
}
