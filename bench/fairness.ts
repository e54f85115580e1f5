import {
  DRAIN_TASKS,
  fmt,
  out,
  pool,
  postgresBusyMs,
  ratio,
  server,
  targets,
  truncate,
  until,
  verdict,
} from './common.js';

/**
 * Fairness between owners (DESIGN §17), one worker process (ROLE=worker, RUNNER_CONCURRENCY=8)
 * with RUNNER_FAIRNESS=owner against =fifo:
 *
 * - another owner's first task behind 100 000 of one owner's: the worker is draining the
 *   backlog when the other task is started; its wait is from its insert to its completion, both
 *   stamped by Postgres (`created_at`, `last_updated_at`);
 * - the drain of DRAIN_TASKS no-op tasks, once of one owner and once spread over 50 owners (a
 *   fair claim's round then walks 4 of them), each setting BENCH_FAIR_DRAIN_ROUNDS times (3),
 *   alternating, the best run kept, with the CPU the worker and Postgres spent a task.
 */

const BACKLOG = Number(process.env.BENCH_FAIR_BACKLOG ?? 100_000);
const FAIR_ROUNDS = 3;
const DRAIN_ROUNDS = Number(process.env.BENCH_FAIR_DRAIN_ROUNDS ?? 3);

/** Inserts `n` ready no-op tasks of `owners` owners (`big` alone when 1) and wakes the workers. */
async function queue(n: number, owners: number, owner = 'big'): Promise<void> {
  await pool.query(
    `with t as (
       insert into tasks (id, owner, kind, input, ttl_ms, expires_at, poll_interval_ms, max_attempts, timeout_ms)
       select gen_random_uuid(), case when $2::int = 1 then $3 else 'o' || (i % $2::int) end, 'noop',
              '{}', 7200000, now() + interval '2 hours', 1000, 3, 900000
       from generate_series(1, $1::int) i returning 1
     ) select pg_notify('taskhandle_ready', 'noop') from (select count(*) from t) c`,
    [n, owners, owner],
  );
}

const completed = async () =>
  (await pool.query(`select count(*)::int as n from tasks where status = 'completed'`)).rows[0].n;

/** The other owner's task's wait, in ms, behind a backlog being drained. */
async function firstTaskWait(fairness: 'owner' | 'fifo'): Promise<number> {
  await truncate();
  const worker = await server(`fair-${fairness}`, {
    ROLE: 'worker',
    RUNNER_CONCURRENCY: '8',
    RUNNER_FAIRNESS: fairness,
  });
  try {
    await queue(BACKLOG, 1);
    await until(async () => (await completed()) >= 1_000, 'backlog draining');
    const { rows } = await pool.query<{ id: string }>(
      `with t as (
         insert into tasks (id, owner, kind, input, ttl_ms, expires_at, poll_interval_ms, max_attempts, timeout_ms)
         values (gen_random_uuid(), 'other', 'noop', '{}', 7200000, now() + interval '2 hours', 1000, 3, 900000)
         returning id
       ) select t.id, pg_notify('taskhandle_ready', 'noop') from t`,
    );
    const id = rows[0]!.id;
    let waited = 0;
    await until(
      async () => {
        const r = await pool.query<{ status: string; ms: string }>(
          `select status, extract(epoch from last_updated_at - created_at) * 1000 as ms
           from tasks where id = $1`,
          [id],
        );
        waited = Number(r.rows[0]!.ms);
        return r.rows[0]!.status === 'completed';
      },
      `the other owner's task (${fairness})`,
      { withinMs: 300_000, everyMs: 5 },
    );
    return waited;
  } finally {
    await worker.stop();
  }
}

interface Drain {
  /** Tasks a second. */
  rate: number;
  /** CPU ms a task: the worker process's, and every Postgres process's on this machine. */
  workerCpu: number;
  pgCpu: number;
}

/** Drains DRAIN_TASKS tasks of `owners` owners. */
async function drainRate(fairness: 'owner' | 'fifo', owners: number): Promise<Drain> {
  await truncate();
  const worker = await server(`fair-drain-${fairness}`, {
    ROLE: 'worker',
    RUNNER_CONCURRENCY: '8',
    RUNNER_FAIRNESS: fairness,
  });
  try {
    const before = await worker.ask<{ user: number; system: number }>('cpu');
    const pgBefore = postgresBusyMs();
    const started = performance.now();
    await queue(DRAIN_TASKS, owners);
    await until(async () => (await completed()) >= DRAIN_TASKS, `drain (${fairness})`, {
      everyMs: 50,
    });
    const seconds = (performance.now() - started) / 1000;
    const after = await worker.ask<{ user: number; system: number }>('cpu');
    return {
      rate: DRAIN_TASKS / seconds,
      workerCpu: (after.user - before.user + after.system - before.system) / 1000 / DRAIN_TASKS,
      pgCpu: (postgresBusyMs() - pgBefore) / DRAIN_TASKS,
    };
  } finally {
    await worker.stop();
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

export async function fairness(): Promise<void> {
  out(
    `## Fairness between owners: ${fmt(BACKLOG)} of one owner's tasks, one worker process, 8 at a time`,
  );
  out();
  const fair: number[] = [];
  for (let i = 0; i < FAIR_ROUNDS; i++) fair.push(await firstTaskWait('owner'));
  const fifo = await firstTaskWait('fifo');
  const runs = {
    one: { owner: [] as Drain[], fifo: [] as Drain[] },
    fifty: { owner: [] as Drain[], fifo: [] as Drain[] },
  };
  for (let round = 0; round < DRAIN_ROUNDS; round++)
    for (const mode of ['owner', 'fifo'] as const) {
      runs.one[mode].push(await drainRate(mode, 1));
      runs.fifty[mode].push(await drainRate(mode, 50));
    }
  await truncate();
  const best = (xs: Drain[]) => Math.max(...xs.map((x) => x.rate));
  const cpu = (xs: Drain[], pick: (x: Drain) => number) => median(xs.map(pick));
  const rates = { owner: best(runs.one.owner), fifo: best(runs.one.fifo) };
  const spread = { owner: best(runs.fifty.owner), fifo: best(runs.fifty.fifo) };

  out('| measure | RUNNER_FAIRNESS=owner | RUNNER_FAIRNESS=fifo | owner vs fifo |');
  out('| --- | ---: | ---: | ---: |');
  out(
    `| another owner's first task behind ${fmt(BACKLOG)} of one owner's: insert → completed, ms (owner: median of ${FAIR_ROUNDS}) | ${fmt(median(fair), 1)} | ${fmt(fifo, 0)} | ${(median(fair) / fifo).toFixed(4)}× |`,
  );
  for (const [label, set, r] of [
    ['one owner', runs.one, rates],
    ['50 owners', runs.fifty, spread],
  ] as const) {
    out(
      `| drain ${fmt(DRAIN_TASKS)} tasks of ${label}, tasks/s (best of ${DRAIN_ROUNDS}) | ${fmt(r.owner)} | ${fmt(r.fifo)} | ${ratio(r.owner, r.fifo)} |`,
    );
    out(
      `| … worker CPU ms a task (median) | ${fmt(
        cpu(set.owner, (x) => x.workerCpu),
        3,
      )} | ${fmt(
        cpu(set.fifo, (x) => x.workerCpu),
        3,
      )} | ${ratio(
        cpu(set.owner, (x) => x.workerCpu),
        cpu(set.fifo, (x) => x.workerCpu),
      )} |`,
    );
    out(
      `| … Postgres CPU ms a task (median; every Postgres process on the machine) | ${fmt(
        cpu(set.owner, (x) => x.pgCpu),
        3,
      )} | ${fmt(
        cpu(set.fifo, (x) => x.pgCpu),
        3,
      )} | ${ratio(
        cpu(set.owner, (x) => x.pgCpu),
        cpu(set.fifo, (x) => x.pgCpu),
      )} |`,
    );
  }
  out();
  const list = (xs: Drain[]) => xs.map((x) => fmt(x.rate)).join(', ');
  out(
    `The other owner's task is started once the worker has completed 1 000 of the backlog; with \`fifo\` it waits behind the rest of it, with \`owner\` the next claim takes it (what the worker's local queue already holds goes first: under a backlog its prefetch grows to about 100 ms of work, see docs/kinds.md). The drains are timed from the insert of the whole batch (one statement, one NOTIFY) until every task is completed, the settings alternating: owner ${list(runs.one.owner)} (50 owners ${list(runs.fifty.owner)}), fifo ${list(runs.one.fifo)} (50 owners ${list(runs.fifty.fifo)}) tasks/s.`,
  );
  out();
  const worst = Math.min(rates.owner / rates.fifo, spread.owner / spread.fifo);
  targets.push(
    `| drain with fairness on ≥ 0.9× §14's order (fifo) | ${worst.toFixed(2)}× (one owner ${ratio(rates.owner, rates.fifo)}, 50 owners ${ratio(spread.owner, spread.fifo)}) | ${verdict(worst >= 0.9)} |`,
  );
  targets.push(
    `| another owner's first task behind ${fmt(BACKLOG)} of one owner's, fair vs fifo (no target; a tenth of fifo's wait at most) | ${fmt(median(fair), 1)} ms vs ${fmt(fifo)} ms | ${verdict(median(fair) < fifo / 10)} |`,
  );
}
