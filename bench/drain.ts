import { availableParallelism } from 'node:os';
import { makeWorkerUtils, type WorkerUtils } from 'graphile-worker';
import pino from 'pino';
import { connect } from '../src/db/connect.js';
import { claimWork } from '../src/tasks/sql/claim.js';
import { recordOutcomes } from '../src/tasks/sql/outcomes.js';
import {
  DRAIN_TASKS,
  databaseUrl,
  fmt,
  out,
  pool,
  server,
  targets,
  truncate,
  verdict,
} from './common.js';
import { type Drained, timed } from './drain-window.js';
import { spawnChild } from './processes.js';

/**
 * Queued no-op tasks drained by one worker process, beside graphile-worker configured for
 * throughput on the same database, alternating, two runs each. Besides the time, the CPU a task
 * costs the worker process and the Postgres backends of the benchmark's database.
 * BENCH_DRAIN_ENV='{"RUNNER_PREFETCH":"500"}' runs our worker with more settings;
 * BENCH_DRAIN_PROFILE=1 writes a CPU profile of each worker over each drain (and nothing else)
 * to bench/profiles/drain-*.cpuprofile (`npx tsx bench/profile-top.ts` reads one).
 */

const OUR_ENV: Record<string, string> = {
  ROLE: 'worker',
  RUNNER_CONCURRENCY: '8',
  ...(JSON.parse(process.env.BENCH_DRAIN_ENV ?? '{}') as Record<string, string>),
};

/** The queued tasks, in one statement with one NOTIFY, as a batch start leaves them. */
const queueTasks = () =>
  pool.query(
    `with t as (
       insert into tasks (id, owner, kind, input, ttl_ms, expires_at, poll_interval_ms, max_attempts, timeout_ms)
       select gen_random_uuid(), 'alice', 'noop', '{}', 3600000, now() + interval '1 hour', 1000, 3, 900000
       from generate_series(1, ${DRAIN_TASKS}) returning 1
     ) select pg_notify('taskhandle_ready', 'noop') from (select count(*) from t) c`,
  );

export async function drainOurs(): Promise<Drained> {
  await truncate();
  await pool.query('vacuum analyze tasks');
  const worker = await server('drain-worker', OUR_ENV);
  try {
    return await timed(worker, queueTasks, async () => {
      const { rows } = await pool.query(
        `select not exists (select 1 from tasks where status = 'working') as done`,
      );
      return rows[0].done;
    });
  } finally {
    await worker.stop();
  }
}

/** Tasks a statement of the floor claims, and completes. */
const FLOOR_BATCH = 500;

/**
 * The floor of our storage model: the drain by the worker's own two statements and nothing
 * else. Two connections each claim FLOOR_BATCH tasks (`claimWork`, fair, as the worker claims)
 * and complete them all in one `recordOutcomes` (their summaries, as the worker's outcomes of
 * tasks nobody watches), until a claim finds none: no handler, no bookkeeping, no events read.
 */
async function drainStatements(): Promise<Drained> {
  await truncate();
  await pool.query('vacuum analyze tasks');
  const log = pino({ level: 'warn' });
  const timeouts = { statementTimeoutMs: 30_000, connectTimeoutMs: 5_000 };
  const db = await connect({ databaseUrl, dataDir: '', poolSize: 2, timeouts, log });
  const workerId = 'drain-floor';
  const loop = async () => {
    for (;;) {
      const { rows } = await claimWork(db.kysely, workerId, ['noop'], FLOOR_BATCH, 60_000);
      if (rows.length === 0) return;
      await recordOutcomes(
        db.kysely,
        rows.map((r) => ({
          id: r.id,
          lease: { workerId, attempt: r.attempt },
          ending: 'complete' as const,
          result: 'null',
        })),
        () => false,
      );
    }
  };
  let loops: Promise<unknown> = Promise.resolve();
  let finished = false;
  try {
    const drained = await timed(
      undefined,
      async () => {
        await queueTasks();
        loops = Promise.all([loop(), loop()]).finally(() => {
          finished = true;
        });
      },
      async () => finished,
    );
    await loops;
    return drained;
  } finally {
    await loops.catch(() => {});
    await db.close();
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
  let floor: Drained | undefined;
  let reference: Drained | undefined;
  let defaults: Drained | undefined;
  try {
    await utils.migrate();
    for (let round = 1; round <= 2; round++) {
      const a = await drainOurs();
      const f = await drainStatements();
      const b = await drainGraphile(utils, true);
      console.log(
        `  round ${round}: ours ${fmt(a.ms)} ms, our statements alone ${fmt(f.ms)} ms, graphile-worker ${fmt(b.ms)} ms`,
      );
      ours = better(ours, a);
      floor = better(floor, f);
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
    '| worker | seconds | tasks/s | vs reference | CPU ms a task: worker | Postgres | transactions that wrote, a task |',
  );
  out('| --- | ---: | ---: | ---: | ---: | ---: | ---: |');
  const line = (label: string, d: Drained) =>
    out(
      `| ${label} | ${fmt(d.ms / 1000, 2)} | ${fmt(rate(d))} | ${(rate(d) / rate(reference!)).toFixed(2)}× | ${fmt(d.workerCpu, 3)} | ${fmt(d.postgresCpu, 3)} | ${fmt(d.writes, 3)} |`,
    );
  line(`taskhandle worker (${settings})`, ours!);
  line(
    `floor: our claim and outcome statements alone, ${FLOOR_BATCH} tasks a statement, two connections, no worker (CPU: the bench process)`,
    floor!,
  );
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
    "Timed from the insert of the whole batch (ours: one statement and one NOTIFY; graphile-worker: one `addJobs`) until no task is left WORKING (ours) or every job is gone (graphile-worker deletes finished jobs); both workers were idle and listening before, the table vacuumed. Two runs each, alternating, the better one kept. CPU: the worker process (process.cpuUsage) and the Postgres backends connected to the benchmark database (/proc), over the same window, divided by the tasks. Transactions that wrote: transaction ids assigned over the window (the whole server's), less the fill's own.",
  );
  out();
  // What binds a drain on this machine: the CPU a task costs its two sides together. With
  // every core busy, that cost caps the rate at cores / CPU a task, however well the two
  // sides overlap.
  const cpus = availableParallelism();
  const both = (d: Drained) => d.workerCpu + d.postgresCpu;
  const busy = (d: Drained) => (both(d) * rate(d)) / 1000;
  const ceiling = (d: Drained) => (cpus * 1000) / both(d);
  out(
    `CPU a task, the worker's and Postgres's together: ours ${fmt(both(ours!), 3)} ms, our statements alone ${fmt(both(floor!), 3)} ms (Postgres's part ${fmt(floor!.postgresCpu, 3)} ms), the reference ${fmt(both(reference!), 3)} ms. At the rates above that kept ${fmt(busy(ours!), 2)}, ${fmt(busy(floor!), 2)} and ${fmt(busy(reference!), 2)} of this machine's ${cpus} cores busy. With the ${cpus} cores all busy it would cap ours at ${fmt(ceiling(ours!))} tasks/s (${(ceiling(ours!) / rate(reference!)).toFixed(2)}× the reference's rate) and our statements alone at ${fmt(ceiling(floor!))} (${(ceiling(floor!) / rate(reference!)).toFixed(2)}×): reaching the reference's rate takes at most ${fmt((cpus * 1000) / rate(reference!), 3)} ms a task, all sides together.`,
  );
  out();
  targets.push(
    `| drain ≥ 1.0× graphile-worker configured for throughput | ${(rate(ours!) / rate(reference!)).toFixed(2)}× (${fmt(rate(ours!))} vs ${fmt(rate(reference!))} tasks/s; our claim and outcome statements alone ${(rate(floor!) / rate(reference!)).toFixed(2)}×; CPU a task, worker and Postgres together, ${(both(ours!) / both(reference!)).toFixed(1)}× the reference's, and ${(both(floor!) / both(reference!)).toFixed(1)}× with our statements alone) | ${verdict(rate(ours!) >= rate(reference!))} |`,
  );
}
