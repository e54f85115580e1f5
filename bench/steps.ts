/**
 * `node --expose-gc --import tsx bench/steps.ts` (or `BENCH_ONLY=steps,sleepers,children npm run
 * bench`; `npm run bench` runs them in every full run, with --expose-gc for the RSS row): the
 * three rows of DESIGN §16's Cost, each beside its floor measured in the same run, on one
 * ROLE=all app in this process (RUNNER_CONCURRENCY=8) over a throwaway Postgres database.
 * `npm run bench` runs them in a process of their own (see `stepsInOwnProcess`), so the RSS
 * row starts from a process that did nothing else before: a process that ran the other rows'
 * apps, loads and clients first has its allocator and heap shaped by them, and its RSS moved
 * by −60 to +225 MiB across runs with the heap in use falling each time.
 *
 * - steps: the transactions that write and the WAL flushes a step adds (DESIGN §16's cost: one
 *   durable commit beyond its work), counted; and a handler of 100 `ctx.step`s against one
 *   doing the same 100 awaits plainly (each timed by the handler itself), per step, reported
 *   against one bare INSERT commit on the same database, beside what that commit carries: a
 *   plain commit of the journal's own row, and the step's own statement run directly, on a
 *   raw connection and through the app's pool.
 * - sleepers: 10 000 tasks asleep on the process (BENCH_SLEEPERS to change): RSS growth once
 *   all are suspended (≤ 50 MiB) and, as they wake, from due to running (p99 ≤ 1.5 s).
 * - children: one task fanning out 1 000 `sleep` children and in (Promise.all over their
 *   results), against 1 000 startTasks (10 batches) and waiting for them from a client.
 */
import { sql } from 'kysely';
import type { App } from '../src/app.js';
import { loadConfig } from '../src/config/config.js';
import { defineTaskKind } from '../src/tasks/kinds.js';
import { recreateMigratedDatabase } from '../test/helpers/migrated-database.js';
import { BASE_URL, fmt, out, report, runs, targets, verdict } from './common.js';
import { percentile } from './load.js';
import { ALICE, ended, stepKinds, stepsRow, WORKER_ID } from './step-row.js';

const SLEEPERS = Number(process.env.BENCH_SLEEPERS ?? 10_000);

/** When each sleeper ran after its wake-up: ms past its due time. */
const lateness: number[] = [];
const sleeper = defineTaskKind<{ at: number }, null>({
  name: 'bench-sleeper',
  description: 'sleeps until `at`',
  inputSchema: { type: 'object' },
  async run(ctx) {
    await ctx.sleepUntil('nap', new Date(ctx.input.at));
    lateness.push(Date.now() - ctx.input.at);
    return null;
  },
});

async function startApp(url: string): Promise<App> {
  const { createApp } = await import('../src/app.js');
  const config = loadConfig({
    DATABASE_URL: url,
    AUTH_JWT_SECRET: 'taskhandle-bench-secret-0123456789abcdef0123',
    PORT: '0',
    LOG_LEVEL: 'warn',
    RUNNER_CONCURRENCY: '8',
    NODE_ENV: 'production',
    TASK_PURGE_INTERVAL_MS: '3600000',
  });
  return createApp({ config, kinds: [...stepKinds, sleeper], workerId: WORKER_ID });
}

const rssMiB = () => process.memoryUsage().rss / 2 ** 20;
const heapMiB = () => process.memoryUsage().heapUsed / 2 ** 20;
/** The parts of the process's memory, MiB: what RSS growth is made of. */
const memoryParts = () => {
  const m = process.memoryUsage();
  const mib = (n: number) => fmt(n / 2 ** 20, 1);
  return `rss ${mib(m.rss)}, heap committed ${mib(m.heapTotal)}, heap used ${mib(m.heapUsed)}, external ${mib(m.external)} (array buffers ${mib(m.arrayBuffers)})`;
};
const gc = () => (globalThis as { gc?: () => void }).gc?.();
/**
 * A full collection, a second for V8 and the allocator to hand freed memory back to the
 * system, and another collection: what the process holds, not what it has yet to return.
 */
const settle = async () => {
  gc();
  await new Promise((r) => setTimeout(r, 1_000));
  gc();
};

/** Starts `count` sleepers due at `at(i)`, in batches of 100. */
async function startSleepers(app: App, count: number, at: (i: number) => number): Promise<void> {
  for (let i = 0; i < count; i += 100) {
    const batch = Array.from({ length: Math.min(100, count - i) }, (_, j) => ({
      kind: 'bench-sleeper',
      input: { at: at(i + j) },
    }));
    await app.tasks.startMany(ALICE, batch);
  }
}

async function sleepersRow(app: App): Promise<void> {
  // The floor: as many sleepers already due, which run to the end without suspending (the
  // same starts, rows and cache), then a full collection. The growth below is what sleeping
  // adds to that, not what the process needed to start 10 000 tasks at all.
  await startSleepers(app, SLEEPERS, () => 0);
  while (lateness.length < SLEEPERS) await new Promise((r) => setTimeout(r, 200));
  lateness.length = 0;
  await settle();
  const rssBefore = rssMiB();
  const partsBefore = memoryParts();
  const heapBefore = heapMiB();
  const startedAt = Date.now();
  // Due after every sleeper had time to suspend (on a loaded machine too), spread over 30 s.
  const base = startedAt + 60_000 + SLEEPERS * 10;
  await startSleepers(app, SLEEPERS, (i) => base + Math.floor((i * 30_000) / SLEEPERS));
  const db = app.db.kysely;
  const asleep = async () =>
    Number(
      (
        await sql<{
          n: string;
        }>`select count(*) as n from tasks where kind = 'bench-sleeper' and hold = 'time' and worker_id is null`.execute(
          db,
        )
      ).rows[0]?.n ?? 0,
    );
  while ((await asleep()) < SLEEPERS) {
    if (Date.now() > base) throw new Error('the sleepers did not all suspend before their time');
    await new Promise((r) => setTimeout(r, 200));
  }
  const suspendedAfter = Date.now() - startedAt;
  await settle();
  const rssAsleep = rssMiB();
  const partsAsleep = memoryParts();
  const heapAsleep = heapMiB();
  const cached = app.events.cacheStats.size;
  const held = app.runner?.held ?? 0;
  while (lateness.length < SLEEPERS) await new Promise((r) => setTimeout(r, 200));
  const sorted = [...lateness].sort((a, b) => a - b);
  const growth = rssAsleep - rssBefore;
  const p99 = percentile(sorted, 99);
  out(`## Sleepers: ${fmt(SLEEPERS)} tasks asleep on one process (RUNNER_CONCURRENCY=8)`);
  out();
  out('| figure | value | floor | |');
  out('| --- | ---: | ---: | --- |');
  out(
    `| RSS growth, all suspended | ${fmt(growth, 1)} MiB | ≤ 50 MiB | ${verdict(growth <= 50)} |`,
  );
  out(
    `| due → running: p50 / **p99** / max | ${fmt(percentile(sorted, 50))} / ${fmt(p99)} / ${fmt(sorted.at(-1) ?? 0)} ms | p99 ≤ 1 500 ms | ${verdict(p99 <= 1_500)} |`,
  );
  out();
  targets.push(
    `| ${fmt(SLEEPERS)} tasks asleep on one process: RSS growth ≤ 50 MiB | ${fmt(growth, 1)} MiB | ${verdict(growth <= 50)} |`,
    `| ${fmt(SLEEPERS)} sleepers, due → running p99 ≤ 1.5 s | ${fmt(p99)} ms | ${verdict(p99 <= 1_500)} |`,
  );
  out(
    `All ${fmt(SLEEPERS)} were started (batches of 100) and suspended in ${fmt(suspendedAfter / 1000, 1)} s; tasks held by the runner while they slept: ${held}. Wake-ups spread evenly over 30 s. RSS ${fmt(rssBefore, 1)} → ${fmt(rssAsleep, 1)} MiB, from after as many tasks ran to the end without sleeping; heap in use ${fmt(heapBefore, 1)} → ${fmt(heapAsleep, 1)} MiB (after a full collection: run with --expose-gc), of which the event hub's row cache (bounded at 10 000 rows) held ${fmt(cached)} rows. Memory before: ${partsBefore}; asleep: ${partsAsleep}.`,
  );
  out();
}

async function childrenRow(app: App): Promise<void> {
  const N = 1_000;
  const fan = async () => {
    const started = performance.now();
    const { task } = await app.tasks.start(ALICE, {
      kind: 'pipeline',
      input: { stages: 1, children: N, childMs: 0 },
    });
    const done = await ended(app, task.id, 10);
    if (done.status !== 'completed') throw new Error(`fan-out ended ${done.status}`);
    return performance.now() - started;
  };
  const client = async () => {
    const started = performance.now();
    const ids: string[] = [];
    for (let i = 0; i < N; i += 100) {
      const tasks = await app.tasks.startMany(
        ALICE,
        Array.from({ length: 100 }, () => ({ kind: 'sleep', input: { ms: 0, steps: 1 } })),
      );
      ids.push(...tasks.map((t) => t.id));
    }
    const db = app.db.kysely;
    for (;;) {
      const { rows } = await sql<{ n: string }>`
        select count(*) as n from tasks where id = any(${ids}::uuid[]) and status = 'completed'`.execute(
        db,
      );
      if (Number(rows[0]?.n) === N) break;
      await new Promise((r) => setTimeout(r, 10));
    }
    return performance.now() - started;
  };
  await fan(); // warm up
  const fans: number[] = [];
  const clients: number[] = [];
  for (let i = 0; i < 2; i++) {
    fans.push(await fan());
    clients.push(await client());
  }
  const best = (xs: number[]) => Math.min(...xs);
  out(`## Children: ${fmt(N)} fanned out and in`);
  out();
  out('| path | best of 2, s | |');
  out('| --- | ---: | ---: |');
  out(
    `| one task: ${fmt(N)} startChild, Promise.all over their results | ${fmt(best(fans) / 1000, 2)} | ${(best(fans) / best(clients)).toFixed(2)}× |`,
  );
  out(
    `| reference: a client's ${fmt(N)} startTasks (10 × 100) and waiting for all | ${fmt(best(clients) / 1000, 2)} | 1.00× |`,
  );
  out();
}

export async function steps(): Promise<void> {
  const url = await recreateMigratedDatabase(BASE_URL, 'taskhandle_bench_steps');
  const app = await startApp(url);
  try {
    if (runs('steps')) await stepsRow(app, url);
    if (runs('children')) await childrenRow(app);
    if (runs('sleepers')) await sleepersRow(app);
  } finally {
    await app.stop();
  }
}

/** The line a child run ends with: its report and targets, for the parent run's RESULTS.md. */
export const PARTS_LINE = 'BENCH_STEPS_PARTS ';

if (import.meta.url === `file://${process.argv[1]}`) {
  await steps();
  if (process.env.BENCH_STEPS_CHILD === '1')
    console.log(`${PARTS_LINE}${JSON.stringify({ report, targets })}`);
  process.exit(0);
}
