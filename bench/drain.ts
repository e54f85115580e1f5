import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { makeWorkerUtils, type WorkerUtils } from 'graphile-worker';
import {
  DB_NAME,
  DRAIN_TASKS,
  databaseUrl,
  fmt,
  out,
  pool,
  procStat,
  server,
  targets,
  truncate,
  until,
  verdict,
} from './common.js';
import { type Child, PROFILE_DIR, spawnChild } from './processes.js';

const WINDOW_PROFILE = process.env.BENCH_DRAIN_PROFILE === '1';

/**
 * Queued no-op tasks drained by one worker process, beside graphile-worker configured for
 * throughput on the same database, alternating, two runs each. Besides the time, the CPU a task
 * costs the worker process and the Postgres backends of the benchmark's database.
 * BENCH_DRAIN_ENV='{"RUNNER_PREFETCH":"500"}' runs our worker with more settings;
 * BENCH_DRAIN_PROFILE=1 writes a CPU profile of each worker over each drain (and nothing else)
 * to bench/profiles/drain-*.cpuprofile (`npx tsx bench/profile-top.ts` reads one).
 */

interface Drained {
  ms: number;
  /** Transactions committed in the benchmark's database, and WAL flushes, a task. */
  commits: number;
  walSyncs: number;
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

/** Transactions committed in this database, and WAL flushes (the whole server's), so far. */
async function counters(): Promise<{ commits: number; walSyncs: number }> {
  const { rows } = await pool.query(
    `select (select xact_commit from pg_stat_database where datname = $1) as commits,
            (select wal_sync from pg_stat_wal) as wal_syncs`,
    [DB_NAME],
  );
  return { commits: Number(rows[0].commits), walSyncs: Number(rows[0].wal_syncs) };
}

async function cpuMs(child: Child): Promise<number> {
  const { user, system } = await child.ask<{ user: number; system: number }>('cpu');
  return (user + system) / 1000;
}

/** Times `fill` (queueing the tasks) until `done` holds, with the CPU each side spent. */
async function timed(
  worker: Child,
  fill: () => Promise<unknown>,
  done: () => Promise<boolean>,
): Promise<Drained> {
  if (WINDOW_PROFILE) {
    mkdirSync(PROFILE_DIR, { recursive: true });
    await worker.ask('profile:start');
  }
  const [cpu0, pg0, db0] = [await cpuMs(worker), await backendsBusyMs(), await counters()];
  const started = performance.now();
  await fill();
  await until(done, 'drain', { everyMs: 20 });
  const ms = performance.now() - started;
  const [cpu1, pg1, db1] = [await cpuMs(worker), await backendsBusyMs(), await counters()];
  if (WINDOW_PROFILE)
    await worker.ask('profile:stop', {
      file: join(PROFILE_DIR, `${worker.name}-${Date.now()}.cpuprofile`),
    });
  return {
    ms,
    workerCpu: (cpu1 - cpu0) / DRAIN_TASKS,
    postgresCpu: busySince(pg0, pg1) / DRAIN_TASKS,
    // Less the harness's own: its completion checks, one a 20 ms, and these two reads.
    commits: (db1.commits - db0.commits - ms / 20 - 4) / DRAIN_TASKS,
    walSyncs: (db1.walSyncs - db0.walSyncs) / DRAIN_TASKS,
  };
}

const OUR_ENV: Record<string, string> = {
  ROLE: 'worker',
  RUNNER_CONCURRENCY: '8',
  ...(JSON.parse(process.env.BENCH_DRAIN_ENV ?? '{}') as Record<string, string>),
};

export async function drainOurs(): Promise<Drained> {
  await truncate();
  await pool.query('vacuum analyze tasks');
  const worker = await server('drain-worker', OUR_ENV);
  try {
    return await timed(
      worker,
      () =>
        pool.query(
          `with t as (
             insert into tasks (id, owner, kind, input, ttl_ms, expires_at, poll_interval_ms, max_attempts, timeout_ms)
             select gen_random_uuid(), 'alice', 'noop', '{}', 3600000, now() + interval '1 hour', 1000, 3, 900000
             from generate_series(1, ${DRAIN_TASKS}) returning 1
           ) select pg_notify('taskhandle_ready', 'noop') from (select count(*) from t) c`,
        ),
      async () =>
        (
          await pool.query(
            `select not exists (select 1 from tasks where status = 'working') as done`,
          )
        ).rows[0].done,
    );
  } finally {
    await worker.stop();
  }
}

/** graphile-worker's resolved options, as its process reported them (the last run's). */
let graphileOptions: Record<string, unknown> = {};

async function drainGraphile(utils: WorkerUtils, batched: boolean): Promise<Drained> {
  await pool.query('vacuum analyze graphile_worker._private_jobs');
  const gw = await spawnChild(`drain-graphile${batched ? '-batched' : ''}`, 'bench/graphile.ts', {
    env: { DATABASE_URL: databaseUrl, GW_CONCURRENCY: '8', GW_BATCHED: batched ? '1' : '0' },
  });
  try {
    const { options } = await gw.ask<{ options: Record<string, unknown> }>('options');
    if (batched) graphileOptions = options;
    const specs = Array.from({ length: DRAIN_TASKS }, () => ({ identifier: 'noop', payload: {} }));
    return await timed(
      gw,
      () => utils.addJobs(specs),
      async () =>
        !(
          await pool.query('select exists (select 1 from graphile_worker._private_jobs) as pending')
        ).rows[0].pending,
    );
  } finally {
    await gw.stop();
  }
}

const better = (a: Drained | undefined, b: Drained) => (a && a.ms <= b.ms ? a : b);

export async function drain(): Promise<void> {
  out(`## 4. drain: ${fmt(DRAIN_TASKS)} queued no-op tasks, one worker process, 8 at a time`);
  out();
  const utils = await makeWorkerUtils({ connectionString: databaseUrl });
  let ours: Drained | undefined;
  let reference: Drained | undefined;
  let defaults: Drained | undefined;
  try {
    await utils.migrate();
    for (let round = 1; round <= 2; round++) {
      const a = await drainOurs();
      const b = await drainGraphile(utils, true);
      console.log(`  round ${round}: ours ${fmt(a.ms)} ms, graphile-worker ${fmt(b.ms)} ms`);
      ours = better(ours, a);
      reference = better(reference, b);
    }
    defaults = await drainGraphile(utils, false);
  } finally {
    await utils.release();
  }
  await truncate();

  const rate = (d: Drained) => DRAIN_TASKS / (d.ms / 1000);
  const settings = Object.entries(OUR_ENV)
    .map(([k, v]) => `${k}=${v}`)
    .join(', ');
  out(
    '| worker | seconds | tasks/s | vs reference | CPU ms a task: worker | Postgres | commits a task | WAL flushes a task |',
  );
  out('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
  const line = (label: string, d: Drained) =>
    out(
      `| ${label} | ${fmt(d.ms / 1000, 2)} | ${fmt(rate(d))} | ${(rate(d) / rate(reference!)).toFixed(2)}× | ${fmt(d.workerCpu, 3)} | ${fmt(d.postgresCpu, 3)} | ${fmt(d.commits, 3)} | ${fmt(d.walSyncs, 3)} |`,
    );
  line(`taskhandle worker (${settings})`, ours!);
  line(
    'reference: graphile-worker 0.17, concurrency 8, configured for throughput (local queue 500, batched completion and failure)',
    reference!,
  );
  line('graphile-worker 0.17, concurrency 8, its defaults (one run)', defaults!);
  out();
  out(
    `The reference's options as graphile-worker resolved them (\`preset.worker\`): \`${JSON.stringify(graphileOptions)}\`.`,
  );
  out();
  out(
    'Timed from the insert of the whole batch (ours: one statement and one NOTIFY; graphile-worker: one `addJobs`) until no task is left WORKING (ours) or every job is gone (graphile-worker deletes finished jobs); both workers were idle and listening before, the table vacuumed. Two runs each, alternating, the better one kept. CPU: the worker process (process.cpuUsage) and the Postgres backends connected to the benchmark database (/proc), over the same window, divided by the tasks.',
  );
  out();
  targets.push(
    `| drain ≥ 1.0× graphile-worker configured for throughput | ${(rate(ours!) / rate(reference!)).toFixed(2)}× (${fmt(rate(ours!))} vs ${fmt(rate(reference!))} tasks/s) | ${verdict(rate(ours!) >= rate(reference!))} |`,
  );
}
