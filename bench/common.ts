import { readdirSync, readFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import pg from 'pg';
import { recreateMigratedDatabase } from '../test/helpers/migrated-database.js';
import {
  CANCEL_TASK,
  FOLLOW_PROGRESS,
  POLL_HANDLE,
  START_HANDLE,
} from '../test/helpers/operations.js';
import type { LoadResult } from './load.js';
import { type Child, spawnChild } from './processes.js';

/** What every part of the benchmark shares: settings, the database, servers, the report. */

export const SECRET = 'taskhandle-bench-secret-0123456789abcdef0123';
export const BASE_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
/** BENCH_DB names the database (default taskhandle_bench), so that two runs on one server keep apart. */
export const DB_NAME = process.env.BENCH_DB ?? 'taskhandle_bench';
export const CONCURRENCY = 16;
export const WARMUP_MS = 1_500;
export const DURATION_MS = 5_000;
export const EVENT_SAMPLES = Number(process.env.BENCH_EVENT_SAMPLES ?? 300);
export const NOTIFY_SAMPLES = 1_000;
export const DRAIN_TASKS = 10_000;
export const SUBSCRIBERS = Number(process.env.BENCH_SUBSCRIBERS ?? 10_000);
export const PROFILE = process.env.BENCH_PROFILE === '1';
export const ONLY = process.env.BENCH_ONLY?.split(',');
export const runs = (name: string) => !ONLY || ONLY.includes(name);

export const databaseUrl = (() => {
  const url = new URL(BASE_URL);
  url.pathname = `/${DB_NAME}`;
  return url.toString();
})();
if (!['127.0.0.1', 'localhost', '[::1]'].includes(new URL(databaseUrl).hostname)) {
  throw new Error('the benchmark only runs against a Postgres on this machine (127.0.0.1)');
}

export const SERVER_ENV = {
  DATABASE_URL: databaseUrl,
  PORT: '0',
  HOST: '127.0.0.1',
  AUTH_JWT_SECRET: SECRET,
  NODE_ENV: 'production',
  LOG_LEVEL: 'info',
  TASK_PURGE_INTERVAL_MS: '600000',
};

export const report: string[] = [];
export const out = (line = '') => {
  console.log(line);
  report.push(line);
};
export const fmt = (n: number, digits = 0) =>
  Number.isFinite(n)
    ? n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits })
    : '–';
export const ratio = (a: number, b: number) => `${(a / b).toFixed(2)}×`;
export const verdict = (ok: boolean) => (ok ? 'met' : '**missed**');

export async function resetDatabase(): Promise<void> {
  await recreateMigratedDatabase(BASE_URL, DB_NAME);
}

/** A process's name and the fields of /proc/<pid>/stat after it (utime is [11]); throws once it is gone. */
export function procStat(pid: number | string): { name: string; fields: string[] } {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const close = stat.lastIndexOf(')');
  return {
    name: stat.slice(stat.indexOf('(') + 1, close),
    fields: stat.slice(close + 2).split(' '),
  };
}

/**
 * CPU time so far of every process named postgres on this machine (the server and its
 * backends), in ms. A backend that exits is counted on in the server's total for the children
 * it reaped (cutime, cstime), so the sum never falls when a connection closes.
 */
export function postgresBusyMs(): number {
  let ticks = 0;
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      const { name, fields } = procStat(pid);
      if (name !== 'postgres') continue;
      // utime, stime, cutime, cstime: clock ticks (100 a second)
      ticks += Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14]);
    } catch {
      // gone meanwhile
    }
  }
  return (ticks * 1000) / 100;
}

/** Waits until `check` holds, asking every `everyMs`; fails naming `what` after `withinMs`. */
export async function until(
  check: () => Promise<boolean>,
  what: string,
  { withinMs = 120_000, everyMs = 10 } = {},
): Promise<void> {
  const deadline = Date.now() + withinMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what}: not done within ${withinMs / 1000} s`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

export const pool = new pg.Pool({ connectionString: databaseUrl, max: 10 });
export const truncate = () => pool.query('truncate tasks, task_webhooks, task_deliveries');

export function server(
  name: string,
  env: Record<string, string> = {},
  exposeGc = false,
): Promise<Child> {
  return spawnChild(name, 'bench/serve.ts', {
    env: { ...SERVER_ENV, ...env },
    profile: PROFILE,
    exposeGc,
  });
}

export const agent = new Agent({ keepAlive: true, maxSockets: 4 });
export function post(url: string, body: unknown, token: string): Promise<any> {
  return new Promise((resolve, reject) => {
    const text = JSON.stringify(body);
    const req = request(
      url,
      {
        method: 'POST',
        agent,
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      },
      (res) => {
        let data = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (data += chunk));
        res.on('end', () => resolve(JSON.parse(data)));
      },
    );
    req.on('error', reject);
    req.end(text);
  });
}

export const START = START_HANDLE;
export const POLL = POLL_HANDLE;
export const FOLLOW = FOLLOW_PROGRESS;
export const CANCEL = CANCEL_TASK;

export async function startTask(
  api: Child,
  token: string,
  kind: string,
  input: unknown,
): Promise<string> {
  const answer = await post(
    `${api.url}/graphql`,
    { query: START, variables: { input: { kind, input } } },
    token,
  );
  if (!answer.data?.startTask) throw new Error(`startTask failed: ${JSON.stringify(answer)}`);
  return answer.data.startTask.id;
}

export function row(label: string, result: LoadResult, floor: LoadResult): string {
  return `| ${label} | ${fmt(result.perSecond)} | ${fmt(result.p50Ms, 2)} | ${fmt(result.p99Ms, 2)} | ${ratio(result.perSecond, floor.perSecond)} |`;
}

export const best = (a: LoadResult, b: LoadResult) => (a.perSecond >= b.perSecond ? a : b);

/** Runs each contender twice, alternating, and keeps each one's better run (noise on 2 cores is large). */
export async function alternate(
  contenders: Array<[string, () => Promise<LoadResult>]>,
  before: () => Promise<unknown> = async () => {},
): Promise<Map<string, LoadResult>> {
  const results = new Map<string, LoadResult>();
  for (let round = 0; round < 2; round++) {
    for (const [name, run] of contenders) {
      await before();
      const result = await run();
      console.log(
        `  ${name} round ${round + 1}: ${fmt(result.perSecond)}/s p50 ${fmt(result.p50Ms, 2)} ms`,
      );
      const previous = results.get(name);
      results.set(name, previous ? best(previous, result) : result);
    }
  }
  return results;
}

export const targets: string[] = [];
