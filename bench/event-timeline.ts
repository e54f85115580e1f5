/**
 * Where the event row's time goes: `npx tsx bench/event-timeline.ts` runs the event row's
 * sequence (startTask over HTTP, then a subscription over one open WebSocket until its
 * COMPLETED frame) against one ROLE=all server, or an api and a worker process with
 * BENCH_TIMELINE_SPLIT=1, and prints each step's median instant from the client's send: the
 * client's own marks and the servers' (bench/timeline.ts, BENCH_TIMELINE=1), on one
 * wall clock, then the same for the slowest twentieth of the starts (what makes the tail).
 * BENCH_EVENT_SAMPLES sets the samples (300).
 */
import { mintToken } from '../src/auth/mint.js';
import { recreateMigratedDatabase } from '../test/helpers/migrated-database.js';
import {
  agent,
  BASE_URL,
  EVENT_SAMPLES,
  FOLLOW,
  fmt,
  pool,
  SECRET,
  SERVER_ENV,
  startTask,
} from './common.js';
import { percentile } from './load.js';
import { type Child, spawnChild } from './processes.js';
import type { Mark } from './timeline.js';
import { GqlSocket } from './ws-client.js';

const split = process.env.BENCH_TIMELINE_SPLIT === '1';
const WARMUP = 30;
const now = () => performance.timeOrigin + performance.now();

async function servers(): Promise<Record<string, Child>> {
  const url = await recreateMigratedDatabase(BASE_URL, 'taskhandle_timeline');
  const env = { ...SERVER_ENV, DATABASE_URL: url, BENCH_TIMELINE: '1' };
  const spawn = (name: string, role: string) =>
    spawnChild(`timeline-${name}`, 'bench/serve.ts', { env: { ...env, ROLE: role } });
  if (!split) return { server: await spawn('all', 'all') };
  const [api, worker] = await Promise.all([spawn('api', 'api'), spawn('worker', 'worker')]);
  return { api: api!, worker: worker! };
}

/** The marks of one start, in order, each named with its process and, when repeated, its count. */
function perStart(marks: Mark[], sends: number[]): Map<string, number>[] {
  const starts = sends.map(() => new Map<string, number>());
  const sorted = marks.sort((a, b) => a.at - b.at);
  let i = -1;
  for (const { at, name } of sorted) {
    while (i + 1 < sends.length && sends[i + 1]! <= at) i++;
    if (i < 0) continue;
    const seen = starts[i]!;
    let key = name;
    for (let n = 2; seen.has(key); n++) key = `${name} (${n})`;
    seen.set(key, at - sends[i]!);
  }
  return starts;
}

async function main(): Promise<void> {
  const token = await mintToken(SECRET, {
    sub: 'alice',
    scopes: ['tasks:read', 'tasks:write'],
    ttl: '1h',
  });
  const children = await servers();
  const api = children.server ?? children.api!;
  try {
    const socket = await GqlSocket.open(`${api.url.replace(/^http/, 'ws')}/graphql`, token);
    const client: Mark[] = [];
    const sends: number[] = [];
    const one = async () => {
      const sent = now();
      sends.push(sent);
      const id = await startTask(api, token, 'sleep', { ms: 0 });
      client.push({ at: now(), name: 'client: answer received' });
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('no COMPLETED frame within 10 s')), 10_000);
        socket.subscribe(FOLLOW, { id }, (raw) => {
          if (raw.includes('"COMPLETED"')) {
            client.push({ at: now(), name: 'client: COMPLETED frame received' });
            clearTimeout(timer);
            resolve();
          } else if (raw.includes('"type":"error"')) reject(new Error(raw));
        });
      });
    };
    for (let n = 0; n < WARMUP; n++) await one();
    await Promise.all(Object.values(children).map((child) => child.ask('timeline')));
    client.length = 0;
    sends.length = 0;
    for (let n = 0; n < EVENT_SAMPLES; n++) await one();
    socket.close();
    const marks = [...client];
    for (const [name, child] of Object.entries(children)) {
      const { marks: theirs } = await child.ask<{ marks: Mark[] }>('timeline');
      const prefix = split ? `${name}: ` : '';
      for (const mark of theirs) marks.push({ at: mark.at, name: `${prefix}${mark.name}` });
    }
    const starts = perStart(marks, sends);
    report(
      starts,
      `${split ? 'api + worker processes' : 'one ROLE=all process'}, ${starts.length} starts, one at a time`,
    );
    // The tail: the slowest twentieth of the starts, by their COMPLETED frame.
    const frame = (start: Map<string, number>) =>
      start.get('client: COMPLETED frame received') ?? 0;
    const slowest = [...starts]
      .sort((a, b) => frame(b) - frame(a))
      .slice(0, Math.ceil(starts.length / 20));
    console.log();
    report(slowest, `the slowest ${slowest.length} of them`);
  } finally {
    await Promise.all(Object.values(children).map((child) => child.stop()));
  }
}

function report(starts: Map<string, number>[], title: string): void {
  const offsets = new Map<string, number[]>();
  for (const start of starts)
    for (const [name, ms] of start) {
      const list = offsets.get(name) ?? [];
      offsets.set(name, list);
      list.push(ms);
    }
  const rows = [...offsets]
    .map(([name, list]) => {
      const sorted = list.sort((a, b) => a - b);
      return { name, p50: percentile(sorted, 50), p90: percentile(sorted, 90), n: sorted.length };
    })
    .sort((a, b) => a.p50 - b.p50);
  console.log(`${title}; ms from the client's send`);
  console.log();
  console.log('| step | p50 | step from the one above | p90 | starts with it |');
  console.log('| --- | ---: | ---: | ---: | ---: |');
  console.log(`| client: startTask sent | 0.00 | | | ${starts.length} |`);
  let previous = 0;
  for (const { name, p50, p90, n } of rows) {
    console.log(
      `| ${name} | ${fmt(p50, 2)} | +${fmt(p50 - previous, 2)} | ${fmt(p90, 2)} | ${n} |`,
    );
    previous = p50;
  }
}

try {
  await main();
} finally {
  agent.destroy();
  await pool.end();
}
process.exit(0);
