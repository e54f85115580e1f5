import pg from 'pg';
import {
  databaseUrl,
  EVENT_SAMPLES,
  FOLLOW,
  fmt,
  NOTIFY_SAMPLES,
  out,
  server,
  startTask,
  targets,
  truncate,
  verdict,
} from './common.js';
import { INSERT_SQL, insertParams } from './floor.js';
import { percentile } from './load.js';
import type { Child } from './processes.js';
import { GqlSocket } from './ws-client.js';

/** From startTask to its COMPLETED frame, beside a raw LISTEN/NOTIFY round trip. */

/** startTask (sleep, ms 0) over HTTP, then its COMPLETED frame over one open WebSocket, sequentially. */
async function follow(
  api: Child,
  token: string,
): Promise<{ samples: number[]; accepted: number[] }> {
  const socket = await GqlSocket.open(`${api.url.replace(/^http/, 'ws')}/graphql`, token);
  try {
    const accepted: number[] = [];
    const one = async () => {
      const started = performance.now();
      const id = await startTask(api, token, 'sleep', { ms: 0 });
      accepted.push(performance.now() - started);
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('no COMPLETED frame within 10 s')), 10_000);
        socket.subscribe(FOLLOW, { id }, (raw) => {
          if (raw.includes('"COMPLETED"')) {
            clearTimeout(timer);
            resolve();
          } else if (raw.includes('"type":"error"')) reject(new Error(raw));
        });
      });
      return performance.now() - started;
    };
    for (let i = 0; i < 30; i++) await one();
    accepted.length = 0;
    const samples: number[] = [];
    for (let i = 0; i < EVENT_SAMPLES; i++) samples.push(await one());
    return { samples: samples.sort((a, b) => a - b), accepted: accepted.sort((a, b) => a - b) };
  } finally {
    socket.close();
  }
}

export async function event(token: string): Promise<void> {
  out('## 3. event: `startTask` (sleep, ms 0) to its COMPLETED frame over WebSocket');
  out();
  await truncate();
  const [api, worker] = await Promise.all([
    server('event-api', { ROLE: 'api' }),
    server('event-worker', { ROLE: 'worker' }),
  ]);
  let split: { samples: number[]; accepted: number[] };
  try {
    split = await follow(api, token);
  } finally {
    await Promise.all([api.stop(), worker.stop()]);
  }
  const all = await server('event-all', { ROLE: 'all' });
  let single: { samples: number[]; accepted: number[] };
  try {
    single = await follow(all, token);
  } finally {
    await all.stop();
  }
  const { samples, accepted } = split;
  // The floor: one NOTIFY from one connection to another that listens.
  const listener = new pg.Client({ connectionString: databaseUrl });
  const notifier = new pg.Client({ connectionString: databaseUrl });
  await Promise.all([listener.connect(), notifier.connect()]);
  await listener.query('listen bench_rtt');
  const rtt: number[] = [];
  for (let i = 0; i < NOTIFY_SAMPLES + 100; i++) {
    const started = performance.now();
    const arrived = new Promise<void>((resolve) => listener.once('notification', () => resolve()));
    await notifier.query(`select pg_notify('bench_rtt', $1)`, [String(i)]);
    await arrived;
    if (i >= 100) rtt.push(performance.now() - started);
  }
  rtt.sort((a, b) => a - b);
  // What one durable step costs here: the accept's insert + notify, committed (WAL flush), one at a time.
  const commits: number[] = [];
  for (let i = 0; i < 300; i++) {
    const started = performance.now();
    await notifier.query(INSERT_SQL, insertParams('bench', 'reference', {})); // a kind no worker runs
    if (i >= 50) commits.push(performance.now() - started);
  }
  commits.sort((a, b) => a - b);
  await Promise.all([listener.end(), notifier.end()]);

  out('| path | p50 ms | p99 ms | max ms | samples |');
  out('| --- | ---: | ---: | ---: | ---: |');
  out(
    `| startTask over HTTP → worker process runs it → COMPLETED frame on the api process's WebSocket | ${fmt(percentile(samples, 50), 2)} | ${fmt(percentile(samples, 99), 2)} | ${fmt(samples.at(-1)!, 2)} | ${samples.length} |`,
  );
  out(
    `| of which: startTask answered (HTTP, insert + notify committed) | ${fmt(percentile(accepted, 50), 2)} | ${fmt(percentile(accepted, 99), 2)} | ${fmt(accepted.at(-1)!, 2)} | ${accepted.length} |`,
  );
  out(
    `| the same with one ROLE=all process (api and worker in one) | ${fmt(percentile(single.samples, 50), 2)} | ${fmt(percentile(single.samples, 99), 2)} | ${fmt(single.samples.at(-1)!, 2)} | ${single.samples.length} |`,
  );
  out(
    `| floor: raw LISTEN/NOTIFY round trip (pg_notify on one connection → notification on another) | ${fmt(percentile(rtt, 50), 2)} | ${fmt(percentile(rtt, 99), 2)} | ${fmt(rtt.at(-1)!, 2)} | ${rtt.length} |`,
  );
  out(
    `| reference: one durable commit (the accept's insert + notify, driver alone, one at a time) | ${fmt(percentile(commits, 50), 2)} | ${fmt(percentile(commits, 99), 2)} | ${fmt(commits.at(-1)!, 2)} | ${commits.length} |`,
  );
  out();
  out(
    "Across two processes the path waits, in sequence, for the insert + notify (a durable commit), a NOTIFY hop to the worker, its claim (committed without waiting for the flush), its completion + notify (a durable commit) and a NOTIFY hop back to the api process, which reads the completed row once for all its subscribers. In one ROLE=all process with a slot free, the insert is the claim: the task runs once the insert commits, its completion's row goes from its statement straight to the subscriber and the row cache, and the subscription opened after startTask's answer is served from the cache (the start's own row): two durable commits, no NOTIFY hop, no claim, no read, and no other claim after the outcome. What is left is CPU on two shared cores: `npx tsx bench/event-timeline.ts` prints the median instant of each step (BENCH_TIMELINE_SPLIT=1: api + worker). In one process the insert's commit takes ~1 ms, the task's handler starts as it returns, and its outcome's commit (~1.6 ms, against ~1 ms for the insert alone) runs while the process answers startTask and the client subscribes, so the COMPLETED frame leaves ~0.2 ms after that commit; sending the outcome before the answer was tried and gained nothing, as the two then share the same cores. A CPU profile of the server over 600 starts shows it idle 28 % of the time and in socket writes to Postgres 22 % (each loopback send wakes a Postgres backend on the same two cores).",
  );
  out();
  const allP50 = percentile(single.samples, 50);
  const allP99 = percentile(single.samples, 99);
  const splitP50 = percentile(samples, 50);
  targets.push(
    `| start → COMPLETED, one ROLE=all process: p50 ≤ 3 ms | ${allP50.toFixed(2)} ms | ${verdict(allP50 <= 3)} |`,
  );
  targets.push(
    `| start → COMPLETED, one ROLE=all process: p99 ≤ 10 ms | ${allP99.toFixed(2)} ms | ${verdict(allP99 <= 10)} |`,
  );
  targets.push(
    `| start → COMPLETED, api + worker process: p50 ≤ 4 ms | ${splitP50.toFixed(2)} ms | ${verdict(splitP50 <= 4)} |`,
  );
}
