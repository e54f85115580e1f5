/**
 * `npm run bench`: every figure side by side with its floor, measured in one run on this
 * machine, written to bench/RESULTS.md. Needs a Postgres server (DATABASE_URL, default
 * postgres://postgres@127.0.0.1:5432/postgres); works in a database of its own,
 * `taskhandle_bench`, dropped and made anew. All load goes to 127.0.0.1, bounded in time.
 * BENCH_PROFILE=1 writes `--cpu-prof` profiles of the servers to bench/profiles/.
 * BENCH_ONLY=accept,batch,poll,event,drain,keep,fairness,fanout,mcp,webhooks,deliveries,scaling,notify,pooler,tracing,steps,sleepers,children,schedules runs a subset (RESULTS.md is written only for a full run).
 * BENCH_WEBHOOK_PAIRS=n and BENCH_WEBHOOK_WARMUP=n set the webhooks row's sets of rounds (3) and the
 * tasks each round runs before it measures (1 000).
 * BENCH_SUBSCRIBERS=n changes the fan-out's size; BENCH_HEAP=/some/file writes heap snapshots of
 * the fan-out server before and after subscribing (`npx tsx bench/heap-top.ts` summarises one).
 */

import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import { cpus, release, totalmem } from 'node:os';
import { createInterface } from 'node:readline';
import { mintToken } from '../src/auth/mint.js';
import { accept, poll } from './accept-poll.js';
import { batchAccept } from './batch-accept.js';
import {
  agent,
  DURATION_MS,
  fmt,
  ONLY,
  pool,
  report,
  resetDatabase,
  runs,
  SECRET,
  targets,
  WARMUP_MS,
} from './common.js';
import { deliveries } from './deliveries.js';
import { drain } from './drain.js';
import { event } from './event.js';
import { fairness } from './fairness.js';
import { fanout } from './fanout.js';
import { keepCosts } from './keep-costs.js';
import { mcp } from './mcp.js';
import { notify } from './notify.js';
import { pooler } from './pooler.js';
import { ROOT } from './processes.js';
import { scaling } from './scaling.js';
import { schedules } from './schedules.js';
import { PARTS_LINE } from './steps.js';
import { tracing } from './tracing.js';
import { webhooks } from './webhooks.js';

async function machine(): Promise<string[]> {
  const [{ version }] = (await pool.query('select version()')).rows;
  const settings = (
    await pool.query(
      `select name, setting, unit from pg_settings where name in ('shared_buffers', 'synchronous_commit', 'fsync', 'max_connections') order by name`,
    )
  ).rows
    .map(
      (r: { name: string; setting: string; unit: string | null }) =>
        `${r.name}=${r.setting}${r.unit ?? ''}`,
    )
    .join(', ');
  const cpu = cpus();
  return [
    `- CPU: ${cpu.length} × ${cpu[0]?.model ?? 'unknown'}; memory ${fmt(totalmem() / 2 ** 30, 1)} GiB; Linux ${release()}`,
    `- Node ${process.version}; ${version.split(',')[0]} on the same machine (${settings})`,
    '- Everything shares the 2 cores: Postgres, the server processes, the load generator (this process) and the reference servers.',
  ];
}

async function main(): Promise<void> {
  const began = Date.now();
  await resetDatabase();
  const token = await mintToken(SECRET, {
    sub: 'alice',
    scopes: ['tasks:read', 'tasks:write'],
    ttl: '2h',
  });
  const header = [
    '# Benchmark results',
    '',
    `\`npm run bench\` (bench/run.ts), ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC. One run; every row of a table was measured in the same run as its floor. Throughput tables alternate the contenders twice (${WARMUP_MS / 1000} s warm-up + ${DURATION_MS / 1000} s measured each) and keep each one's better run. Servers run with NODE_ENV=production, LOG_LEVEL=info (audit lines on), logs to a file.`,
    '',
    ...(await machine()),
    '',
  ];
  if (runs('accept')) await accept(token);
  if (runs('batch')) await batchAccept(token);
  if (runs('poll')) await poll(token);
  if (runs('event')) await event(token);
  if (runs('drain')) await drain();
  if (runs('keep')) await keepCosts();
  // DESIGN §17: another owner's first task behind one owner's backlog; drain, fair vs fifo.
  if (runs('fairness')) await fairness();
  if (runs('fanout')) await fanout(token);
  if (runs('mcp')) await mcp(token);
  if (runs('webhooks')) await webhooks(token);
  if (runs('deliveries')) await deliveries();
  if (runs('scaling')) await scaling(token);
  if (runs('notify')) await notify(token);
  if (runs('pooler')) await pooler(token);
  if (runs('tracing')) await tracing(token);
  if (runs('schedules')) await schedules();
  // DESIGN §16: steps against plain awaits, 10 000 sleepers, 1 000 children.
  if (runs('steps') || runs('sleepers') || runs('children')) await stepsInOwnProcess();

  const summary = [
    '## Targets',
    '',
    '| target | reached | |',
    '| --- | --- | --- |',
    ...targets,
    '',
    `Whole run: ${fmt((Date.now() - began) / 1000)} s.`,
    '',
  ];
  console.log(summary.join('\n'));
  if (!ONLY)
    writeFileSync(`${ROOT}bench/RESULTS.md`, `${[...header, ...summary, ...report].join('\n')}\n`);
}

/**
 * bench/steps.ts in a child process, its lines shown as they come and its report and targets
 * added to this run's: its sleepers row measures RSS, which this process's earlier rows would
 * have moved.
 */
async function stepsInOwnProcess(): Promise<void> {
  const child = spawn(process.execPath, ['--expose-gc', '--import', 'tsx', 'bench/steps.ts'], {
    cwd: ROOT,
    env: { ...process.env, BENCH_STEPS_CHILD: '1' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let parts: { report: string[]; targets: string[] } | undefined;
  const lines = createInterface({ input: child.stdout });
  lines.on('line', (line) => {
    if (line.startsWith(PARTS_LINE)) parts = JSON.parse(line.slice(PARTS_LINE.length));
    else console.log(line);
  });
  const [code] = (await once(child, 'close')) as [number | null];
  if (code !== 0 || !parts) throw new Error(`bench/steps.ts ended with ${code}`);
  report.push(...parts.report);
  targets.push(...parts.targets);
}

try {
  await main();
} finally {
  agent.destroy();
  await pool.end();
}
process.exit(0);
