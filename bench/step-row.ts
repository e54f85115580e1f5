import pg from 'pg';
import type { App } from '../src/app.js';
import { defineTaskKind, type TaskContext } from '../src/tasks/kinds.js';
import type { Task } from '../src/tasks/task.js';
import { fmt, out, targets, verdict } from './common.js';
import { median } from './load.js';
import {
  bareCommits,
  flushesDuring,
  rawStatementCommits,
  rowCommits,
  statementCommits,
  writesDuring,
} from './step-floors.js';

/**
 * The steps row of bench/steps.ts: a handler of 100 `ctx.step`s against one doing the same 100
 * awaits plainly, each beside the commits it is made of (see bench/step-floors.ts), run on
 * the app bench/steps.ts starts with `stepKinds` among its kinds.
 */

export const ALICE = { id: 'alice', admin: false };
export const WORKER_ID = 'bench-steps-worker';

/** Each task's handler, from its first line to its return: ms by task id. */
const handlerMs = new Map<string, number>();

/** A kind whose handler awaits `each` n times, timing itself into `handlerMs`. */
function timedKind(
  name: string,
  description: string,
  each: (ctx: TaskContext, i: number) => Promise<number>,
) {
  return defineTaskKind<{ n: number }, number>({
    name,
    description,
    inputSchema: { type: 'object' },
    async run(ctx) {
      const t0 = performance.now();
      let sum = 0;
      for (let i = 0; i < ctx.input.n; i++) sum += await each(ctx, i);
      handlerMs.set(ctx.taskId, performance.now() - t0);
      return sum;
    },
  });
}

const stepped = timedKind('bench-steps', 'n steps', (ctx, i) => ctx.step(`s${i}`, async () => i));
const plain = timedKind('bench-awaits', 'n plain awaits', async (_ctx, i) => i);

/** The task `bench-hold` runs as, and how to let it end. */
let holding: { taskId: string; attempt: number; release: () => void } | undefined;
/** Holds its lease until released: a task the step's statement can be run for directly. */
const hold = defineTaskKind<Record<string, never>, null>({
  name: 'bench-hold',
  description: 'holds its lease until released',
  inputSchema: { type: 'object' },
  async run(ctx) {
    await new Promise<void>((release) => {
      holding = { taskId: ctx.taskId, attempt: ctx.attempt, release };
    });
    return null;
  },
});

/** The kinds the steps row runs. */
export const stepKinds = [stepped, plain, hold];

/** Resolves with the task once it ended (read through the service, as a poller would). */
export async function ended(app: App, id: string, everyMs = 5): Promise<Task> {
  for (;;) {
    const task = await app.tasks.get(ALICE, id);
    if (task && task.status !== 'working') return task;
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/**
 * Runs a task to its end; its handler's time, timed by the handler itself: the start, the
 * claim and the outcome are the same for both kinds, and this side's reads while it waits
 * (every 20 ms) stay out of the figure.
 */
async function timeTask(app: App, kind: string, input: unknown): Promise<number> {
  const { task } = await app.tasks.start(ALICE, { kind, input });
  const done = await ended(app, task.id, 20);
  if (done.status !== 'completed') throw new Error(`${kind} ended ${done.status}`);
  return handlerMs.get(task.id)!;
}

/** The held task and its lease, as the step's statement is fenced by. */
function heldTask() {
  const held = holding!;
  return { taskId: held.taskId, lease: { workerId: WORKER_ID, attempt: held.attempt } };
}

export async function stepsRow(app: App, url: string): Promise<void> {
  const rounds = 8;
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  await client.query('create table if not exists bench_floor (id serial primary key, v int)');
  await client.query(
    'create table if not exists bench_step_rows (like task_steps including defaults including constraints including indexes)',
  );
  const withSteps: number[] = [];
  const withAwaits: number[] = [];
  const floors: number[] = [];
  const rowFloors: number[] = [];
  const statements: number[] = [];
  const rawStatements: number[] = [];
  const { task: held } = await app.tasks.start(ALICE, { kind: 'bench-hold', input: {} });
  while (holding?.taskId !== held.id) await new Promise((r) => setTimeout(r, 20));
  await timeTask(app, 'bench-steps', { n: 100 }); // warm up
  await timeTask(app, 'bench-awaits', { n: 100 });
  await bareCommits(client);
  await rowCommits(client);
  await statementCommits(app.db.kysely, heldTask(), rounds);
  await rawStatementCommits(client, app.db.kysely, heldTask(), rounds);
  // Each round runs the six in turn, so a burst of load on the shared machine hits all six.
  // Transactions that wrote, per task of each kind (one of each a round, untimed).
  const writes: number[] = [];
  for (let i = 0; i < rounds; i++) {
    const stepped = await writesDuring(client, () => timeTask(app, 'bench-steps', { n: 100 }));
    const plain = await writesDuring(client, () => timeTask(app, 'bench-awaits', { n: 100 }));
    writes.push((stepped - plain) / 100);
    withSteps.push(await timeTask(app, 'bench-steps', { n: 100 }));
    withAwaits.push(await timeTask(app, 'bench-awaits', { n: 100 }));
    floors.push(await bareCommits(client));
    rowFloors.push(await rowCommits(client));
    statements.push(await statementCommits(app.db.kysely, heldTask(), i));
    rawStatements.push(await rawStatementCommits(client, app.db.kysely, heldTask(), i));
  }
  holding?.release();
  // WAL flushes once (each reading waits for the backends' statistics): one task of each kind.
  const flushed = await flushesDuring(client, () => timeTask(app, 'bench-steps', { n: 100 }));
  const flushedPlain = await flushesDuring(client, () => timeTask(app, 'bench-awaits', { n: 100 }));
  const flushesPerStep = (flushed - flushedPlain) / 100;
  const writesPerStep = median(writes);
  await client.end();
  const ratios = withSteps.map((s, i) => (s - withAwaits[i]!) / floors[i]!);
  const perStep = (median(withSteps) - median(withAwaits)) / 100;
  const commit = median(floors) / 100;
  const ratio = median(ratios);
  const rowRatio = median(withSteps.map((s, i) => (s - withAwaits[i]!) / rowFloors[i]!));
  const ofFloor = (xs: number[]) => median(xs.map((x, i) => x / floors[i]!)).toFixed(2);
  out('## Steps: a 100-step handler against 100 plain awaits');
  out();
  out('| handler | median ms per handler | ms per step |');
  out('| --- | ---: | ---: |');
  out(`| 100 ctx.step | ${fmt(median(withSteps), 1)} | ${fmt(perStep, 2)} |`);
  out(`| 100 plain awaits | ${fmt(median(withAwaits), 1)} | – |`);
  out(`| floor: one bare INSERT commit, same database | – | ${fmt(commit, 2)} |`);
  out(
    `| the journal's row alone: one plain INSERT commit of it | – | ${fmt(median(rowFloors) / 100, 2)} |`,
  );
  out(
    `| the step's statement alone, same raw connection, no ctx.step | – | ${fmt(median(rawStatements) / 100, 2)} |`,
  );
  out(
    `| the step's statement alone, through the app's pool, no ctx.step | – | ${fmt(median(statements) / 100, 2)} |`,
  );
  out();
  out(
    `Where a step's time goes, each against the bare commit of its round (medians): the journal's row committed plainly on the same raw connection ${ofFloor(rowFloors)}×; the step's own statement as \`commitStep\` sends it (the lease's fence, the conflict clause, the result returned), on that raw connection ${ofFloor(rawStatements)}×, and through the app's pool (kysely, the breaker, prepared by name) ${ofFloor(statements)}×; the whole \`ctx.step\` in a running handler ${ratio.toFixed(2)}×. The first is the row: a journal entry is wider than the floor's row and has its own key. The second adds the fence, an index lookup of the task's row, which keeps a worker that lost its lease out of the journal. Those two are Postgres's own work for the one commit, before any of the app's. The third adds what the app's every statement pays; the rest is \`ctx.step\`'s bookkeeping and the running task's turns between steps.`,
  );
  out();
  out(
    `Counted: beyond the plain handler's, a step makes ${writesPerStep.toFixed(2)} transactions that write (xids assigned, median of ${rounds} rounds) and ${flushesPerStep.toFixed(2)} WAL flushes (pg_stat_wal, the whole server's, one task of each kind: ${flushed} against ${flushedPlain}; a flush of other work in the same seconds would count too). That is DESIGN §16's cost, one durable commit a step beyond its work, judged on the transactions: ${verdict(writesPerStep <= 1)}.`,
  );
  out();
  out(
    `Timed, reported: a step takes ${ratio.toFixed(2)} bare INSERT commits (median of ${rounds} rounds, each running the six in turn), ${rowRatio.toFixed(2)} plain commits of its own row. Its one commit carries more than the bare one (the row, the fence), so no step of one commit can take less than a bare INSERT's. What it carries more is a fixed cost beside the WAL flush both wait for: the slower the flush, the nearer the ratio to 1.`,
  );
  out();
  targets.push(
    `| a step costs ≤ 1 durable commit beyond its work (DESIGN §16), counted | ${writesPerStep.toFixed(2)} transactions, ${flushesPerStep.toFixed(2)} WAL flushes a step | ${verdict(writesPerStep <= 1)} |`,
  );
  targets.push(
    `| a step's time against one bare INSERT commit (reported, no target) | ${ratio.toFixed(2)}× (${fmt(perStep, 2)} vs ${fmt(commit, 2)} ms); its statement alone on a raw connection ${ofFloor(rawStatements)}× | — |`,
  );
}
