import { makeWorkerUtils } from 'graphile-worker';
import {
  DRAIN_TASKS,
  databaseUrl,
  fmt,
  out,
  pool,
  ratio,
  server,
  targets,
  truncate,
  verdict,
} from './common.js';
import { spawnChild } from './processes.js';

/** Queued no-op tasks drained by one worker process, beside graphile-worker on the same database. */

async function waitFor(
  what: string,
  check: () => Promise<boolean>,
  timeoutMs: number,
  everyMs = 20,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what}: not done within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

export async function drain(): Promise<void> {
  out(`## 4. drain: ${fmt(DRAIN_TASKS)} queued no-op tasks, one worker process, 8 at a time`);
  out();
  const timings: Array<[string, number]> = [];

  await truncate();
  const worker = await server('drain-worker', { ROLE: 'worker', RUNNER_CONCURRENCY: '8' });
  try {
    const started = performance.now();
    await pool.query(
      `with t as (
         insert into tasks (id, owner, kind, input, ttl_ms, expires_at, poll_interval_ms, max_attempts, timeout_ms)
         select gen_random_uuid(), 'alice', 'noop', '{}', 3600000, now() + interval '1 hour', 1000, 3, 900000
         from generate_series(1, ${DRAIN_TASKS}) returning 1
       ) select pg_notify('taskhandle_ready', 'noop') from (select count(*) from t) c`,
    );
    await waitFor(
      'taskhandle drain',
      async () =>
        (await pool.query(`select count(*)::int as n from tasks where status = 'completed'`))
          .rows[0].n >= DRAIN_TASKS,
      120_000,
    );
    timings.push([
      'taskhandle worker (ROLE=worker, RUNNER_CONCURRENCY=8)',
      performance.now() - started,
    ]);
  } finally {
    await worker.stop();
  }
  await truncate();

  const utils = await makeWorkerUtils({ connectionString: databaseUrl });
  try {
    await utils.migrate();
    for (const batched of [false, true]) {
      const gw = await spawnChild(
        `drain-graphile${batched ? '-batched' : ''}`,
        'bench/graphile.ts',
        {
          env: { DATABASE_URL: databaseUrl, GW_CONCURRENCY: '8', GW_BATCHED: batched ? '1' : '0' },
        },
      );
      try {
        const specs = Array.from({ length: DRAIN_TASKS }, () => ({
          identifier: 'noop',
          payload: {},
        }));
        const started = performance.now();
        await utils.addJobs(specs);
        await waitFor(
          'graphile-worker drain',
          async () =>
            (await pool.query('select count(*)::int as n from graphile_worker.jobs')).rows[0].n ===
            0,
          120_000,
        );
        timings.push([
          batched
            ? 'graphile-worker 0.17, concurrency 8, local queue 32 + batched completion (its opt-in batching)'
            : 'graphile-worker 0.17, concurrency 8, defaults',
          performance.now() - started,
        ]);
      } finally {
        await gw.stop();
      }
    }
  } finally {
    await utils.release();
  }

  const ours = DRAIN_TASKS / (timings[0]![1] / 1000);
  const reference = DRAIN_TASKS / (timings[1]![1] / 1000);
  const batched = DRAIN_TASKS / (timings[2]![1] / 1000);
  out('| worker | seconds | tasks/s | vs graphile-worker (defaults) |');
  out('| --- | ---: | ---: | ---: |');
  for (const [label, ms] of timings) {
    const rate = DRAIN_TASKS / (ms / 1000);
    out(`| ${label} | ${fmt(ms / 1000, 2)} | ${fmt(rate)} | ${ratio(rate, reference)} |`);
  }
  out();
  out(
    "Timed from the insert of the whole batch (one statement, one NOTIFY) until every task is completed (ours) or every job is gone (graphile-worker deletes finished jobs); both workers were idle and listening before. Ours claims the free slots and a prefetch (RUNNER_PREFETCH, default 3 × 8: 32 a claim, as graphile-worker's local queue of 32) into a local queue, frees a slot when its handler returns, and writes the outcomes that finish while a statement is in flight in one statement (one NOTIFY per task), so a claim and a batch of outcomes are in flight together. graphile-worker's defaults run 8 independent fetch/complete loops whose commits (no NOTIFY on completion) overlap.",
  );
  out();
  targets.push(
    `| drain ≥ 1.0× graphile-worker in its batched mode | ${(ours / batched).toFixed(2)}× (${fmt(ours)} vs ${fmt(batched)} tasks/s; ${(ours / reference).toFixed(2)}× its defaults) | ${verdict(ours >= batched)} |`,
  );
}
