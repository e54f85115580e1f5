import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { DB_NAME, DRAIN_TASKS, pool, procStat, until } from './common.js';
import { type Child, PROFILE_DIR } from './processes.js';

/**
 * One drain's window (bench/drain.ts): its time, and the CPU a task costs the
 * process that drains and the Postgres backends of the benchmark's database, with the
 * transactions that wrote. BENCH_DRAIN_PROFILE=1 writes a CPU profile of a worker process over
 * its window (and nothing else) to bench/profiles/.
 */

const WINDOW_PROFILE = process.env.BENCH_DRAIN_PROFILE === '1';

export interface Drained {
  ms: number;
  /** Transactions that wrote, a task (the whole server's). */
  writes: number;
  /** CPU ms a task: the worker process, and the Postgres backends of this database. */
  workerCpu: number;
  postgresCpu: number;
}

/**
 * CPU ms so far of each Postgres backend connected to the benchmark's database, by pid. A
 * window's CPU is what each backend spent since the window's start ({@link busySince}): a
 * total over whoever is connected at each end would lose the CPU of a backend that left
 * meanwhile (an idle pool connection closing), all it had spent since it began.
 */
async function backendsBusyMs(): Promise<Map<number, number>> {
  const { rows } = await pool.query<{ pid: number }>(
    'select pid from pg_stat_activity where datname = $1',
    [DB_NAME],
  );
  const busy = new Map<number, number>();
  for (const { pid } of rows) {
    try {
      const { fields } = procStat(pid);
      busy.set(pid, ((Number(fields[11]) + Number(fields[12])) * 1000) / 100);
    } catch {
      // gone meanwhile
    }
  }
  return busy;
}

/** CPU ms the backends connected at the end spent since `start` (new ones: all they spent). */
function busySince(start: Map<number, number>, end: Map<number, number>): number {
  let ms = 0;
  for (const [pid, at] of end) ms += at - (start.get(pid) ?? 0);
  return ms;
}

/**
 * Transactions that wrote so far: the next transaction id to be assigned, read without taking
 * one. The whole server's, exact at once: Postgres's statistics (pg_stat_database's commits,
 * pg_stat_wal's flushes) are reported by each backend at most once a second, so a window of
 * about a second missed most of them.
 */
async function writes(): Promise<number> {
  const { rows } = await pool.query(
    'select pg_snapshot_xmax(pg_current_snapshot())::text::bigint as next',
  );
  return Number(rows[0].next);
}

/** CPU ms so far of the worker's process (`undefined`: this one). */
async function cpuMs(child: Child | undefined): Promise<number> {
  const { user, system } = child
    ? await child.ask<{ user: number; system: number }>('cpu')
    : process.cpuUsage();
  return (user + system) / 1000;
}

/**
 * Times `fill` (queueing the tasks) until `done` holds, with the CPU each side spent; the
 * worker is `undefined` when this process drains.
 */
export async function timed(
  worker: Child | undefined,
  fill: () => Promise<unknown>,
  done: () => Promise<boolean>,
): Promise<Drained> {
  if (WINDOW_PROFILE && worker) {
    mkdirSync(PROFILE_DIR, { recursive: true });
    await worker.ask('profile:start');
  }
  const [cpu0, pg0, writes0] = [await cpuMs(worker), await backendsBusyMs(), await writes()];
  const started = performance.now();
  await fill();
  await until(done, 'drain', { everyMs: 20 });
  const ms = performance.now() - started;
  const [cpu1, pg1, writes1] = [await cpuMs(worker), await backendsBusyMs(), await writes()];
  if (WINDOW_PROFILE && worker)
    await worker.ask('profile:stop', {
      file: join(PROFILE_DIR, `${worker.name}-${Date.now()}.cpuprofile`),
    });
  return {
    ms,
    workerCpu: (cpu1 - cpu0) / DRAIN_TASKS,
    postgresCpu: busySince(pg0, pg1) / DRAIN_TASKS,
    // Less the fill's own (the harness's checks write nothing).
    writes: (writes1 - writes0 - 1) / DRAIN_TASKS,
  };
}
