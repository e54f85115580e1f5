import WebSocket from 'ws';
import {
  CANCEL,
  FOLLOW,
  fmt,
  out,
  PROFILE,
  post,
  ratio,
  SUBSCRIBERS,
  server,
  startTask,
  targets,
  truncate,
  verdict,
} from './common.js';
import { percentile } from './load.js';
import { PROFILE_DIR, spawnChild } from './processes.js';
import { GqlSocket } from './ws-client.js';

/** Many WebSocket subscribers of one task on one process, beside a bare ws server. */

interface FanoutFigures {
  openMs: number;
  perRss: number;
  perHeap: number;
  latencies: number[];
  /** The server's CPU (user + system), ms, from the send until every socket had its frame. */
  cpuMs: number;
}

/** The floor of the fan-out: the same number of sockets on a bare ws server, one frame to each. */
export async function fanoutFloor(): Promise<FanoutFigures> {
  const floor = await spawnChild('fanout-floor', 'bench/ws-floor.ts', { exposeGc: true });
  const sockets: WebSocket[] = [];
  try {
    const before = await floor.ask<{ rss: number; heapUsed: number; external: number }>('memory');
    const received = new Array<number>(SUBSCRIBERS).fill(0);
    let sentAt = 0;
    let arrived = 0;
    let allArrived: () => void = () => {};
    const everyone = new Promise<void>((resolve) => (allArrived = resolve));
    const openedAt = performance.now();
    for (let batch = 0; batch < SUBSCRIBERS; batch += 250) {
      await Promise.all(
        Array.from(
          { length: Math.min(250, SUBSCRIBERS - batch) },
          (_, k) =>
            new Promise<void>((resolve, reject) => {
              const index = batch + k;
              const socket = new WebSocket(floor.url, { perMessageDeflate: false });
              sockets.push(socket);
              socket.once('open', () => resolve());
              socket.once('error', reject);
              socket.on('message', (data) => {
                if (data.toString().includes('"CANCELLED"') && received[index] === 0) {
                  received[index] = performance.now() - sentAt;
                  if (++arrived === SUBSCRIBERS) allArrived();
                }
              });
            }),
        ),
      );
    }
    const openMs = performance.now() - openedAt;
    await new Promise((r) => setTimeout(r, 500));
    const after = await floor.ask<{ rss: number; heapUsed: number; external: number }>('memory');
    const cpuBefore = await floor.ask<{ user: number; system: number }>('cpu');
    sentAt = performance.now();
    await floor.ask('send');
    await Promise.race([
      everyone,
      new Promise((_, reject) =>
        setTimeout(
          () =>
            reject(new Error(`floor: only ${arrived} of ${SUBSCRIBERS} got the frame within 60 s`)),
          60_000,
        ),
      ),
    ]);
    const cpuAfter = await floor.ask<{ user: number; system: number }>('cpu');
    return {
      openMs,
      cpuMs: (cpuAfter.user + cpuAfter.system - cpuBefore.user - cpuBefore.system) / 1000,
      perRss: (after.rss - before.rss) / SUBSCRIBERS,
      perHeap: (after.heapUsed + after.external - before.heapUsed - before.external) / SUBSCRIBERS,
      latencies: [...received].sort((a, b) => a - b),
    };
  } finally {
    for (const socket of sockets) socket.terminate();
    await floor.stop();
  }
}

export async function fanout(token: string): Promise<void> {
  out(`## 5. fan-out: ${fmt(SUBSCRIBERS)} WebSocket subscribers of one task on one api process`);
  out();
  await truncate();
  const api = await server('fanout-api', { ROLE: 'api' }, true);
  const wsUrl = `${api.url.replace(/^http/, 'ws')}/graphql`;
  const sockets: GqlSocket[] = [];
  try {
    const id = await startTask(api, token, 'sleep', { ms: 3_600_000, steps: 1 });
    // Warm the paths up (JIT, lazily built caches) before the first measurement.
    for (let i = 0; i < 200; i++) {
      const s = await GqlSocket.open(wsUrl, token);
      await new Promise<void>((resolve) => s.subscribe(FOLLOW, { id }, () => resolve()));
      s.close();
    }
    await new Promise((r) => setTimeout(r, 500));
    const before = await api.ask<{ rss: number; heapUsed: number; external: number }>('memory');
    if (process.env.BENCH_HEAP) await api.ask('heap', { file: `${process.env.BENCH_HEAP}.before` });

    const received = new Array<number>(SUBSCRIBERS).fill(0);
    let cancelledAt = 0;
    let arrived = 0;
    let allArrived: () => void = () => {};
    const everyone = new Promise<void>((resolve) => (allArrived = resolve));
    const openedAt = performance.now();
    for (let batch = 0; batch < SUBSCRIBERS; batch += 250) {
      await Promise.all(
        Array.from({ length: Math.min(250, SUBSCRIBERS - batch) }, async (_, k) => {
          const index = batch + k;
          const s = await GqlSocket.open(wsUrl, token);
          sockets.push(s);
          await new Promise<void>((resolve) =>
            s.subscribe(FOLLOW, { id }, (raw) => {
              if (cancelledAt === 0) return resolve();
              if (raw.includes('"CANCELLED"') && received[index] === 0) {
                received[index] = performance.now() - cancelledAt;
                if (++arrived === SUBSCRIBERS) allArrived();
              }
            }),
          );
        }),
      );
    }
    const openMs = performance.now() - openedAt;
    await new Promise((r) => setTimeout(r, 500));
    const after = await api.ask<{ rss: number; heapUsed: number; external: number }>('memory');
    if (process.env.BENCH_HEAP) await api.ask('heap', { file: process.env.BENCH_HEAP });

    if (PROFILE) await api.ask('profile:start');
    const cpuBefore = await api.ask<{ user: number; system: number }>('cpu');
    cancelledAt = performance.now();
    const cancelled = await post(`${api.url}/graphql`, { query: CANCEL, variables: { id } }, token);
    const cancelAnsweredMs = performance.now() - cancelledAt;
    if (cancelled.data?.cancelTask?.status !== 'CANCELLED')
      throw new Error(`cancel failed: ${JSON.stringify(cancelled)}`);
    await Promise.race([
      everyone,
      new Promise((_, reject) =>
        setTimeout(
          () => reject(new Error(`only ${arrived} of ${SUBSCRIBERS} got the event within 60 s`)),
          60_000,
        ),
      ),
    ]);
    const cpuAfter = await api.ask<{ user: number; system: number }>('cpu');
    const cpuMs = (cpuAfter.user + cpuAfter.system - cpuBefore.user - cpuBefore.system) / 1000;
    const latencies = [...received].sort((a, b) => a - b);
    if (PROFILE)
      await api.ask('profile:stop', { file: `${PROFILE_DIR}/fanout-delivery.cpuprofile` });

    for (const s of sockets) s.close();
    sockets.length = 0;
    const perRss = (after.rss - before.rss) / SUBSCRIBERS;
    const perHeap =
      (after.heapUsed + after.external - before.heapUsed - before.external) / SUBSCRIBERS;
    const floor = await fanoutFloor();
    const ms = (l: number[]) =>
      `${fmt(percentile(l, 50), 0)} / ${fmt(percentile(l, 99), 0)} / ${fmt(l.at(-1)!, 0)} ms`;
    out(
      '| measure | taskhandle (ROLE=api): graphql-ws `taskUpdated` | floor: bare `ws` server, one pre-built frame per socket |',
    );
    out('| --- | ---: | ---: |');
    out(`| sockets, one subscription each | ${fmt(SUBSCRIBERS)} | ${fmt(SUBSCRIBERS)} |`);
    out(
      `| time to connect (and subscribe) them all, 250 at a time | ${fmt(openMs / 1000, 1)} s | ${fmt(floor.openMs / 1000, 1)} s |`,
    );
    out(
      `| **memory per subscriber, RSS** (after a full GC) | **${fmt(perRss / 1024, 1)} KiB** | ${fmt(floor.perRss / 1024, 1)} KiB |`,
    );
    out(
      `| memory per subscriber, JS heap + external | ${fmt(perHeap / 1024, 1)} KiB | ${fmt(floor.perHeap / 1024, 1)} KiB |`,
    );
    out(
      `| one event to all: first / p50 / **p99** / last | ${fmt(latencies[0]!, 0)} / ${ms(latencies)} | ${fmt(floor.latencies[0]!, 0)} / ${ms(floor.latencies)} |`,
    );
    out(`| \`cancelTask\` answered after | ${fmt(cancelAnsweredMs, 0)} ms | |`);
    out(
      `| server CPU (user + system) from \`cancelTask\` to the last frame, per 1 000 subscribers | ${fmt((cpuMs / SUBSCRIBERS) * 1000, 1)} ms | ${fmt((floor.cpuMs / SUBSCRIBERS) * 1000, 1)} ms |`,
    );
    out(
      `| p99 vs floor | ${ratio(percentile(latencies, 99), percentile(floor.latencies, 99))} | 1.00× |`,
    );
    out();
    out(
      `Delivery is timed from sending \`cancelTask\` (floor: from telling the server to send) to each socket's CANCELLED frame, as read by one client process holding all the sockets (its reading is included). Server RSS went ${fmt(before.rss / 2 ** 20, 1)} → ${fmt(after.rss / 2 ** 20, 1)} MiB. The row is read once, each viewer's result computed once and serialized once (src/faces/graphql/ws-frames.ts), and handed to the subscribers 256 a turn of the event loop (src/tasks/events/handout.ts), so the first sockets write while the rest are still served; each subscriber's frame is written in that turn, pulled from beneath envelop's hooks with no promise (they leave a result without errors as it is), and only the stream's end goes through the hooks and graphql-ws's \`complete\`, which leaves in the same socket write as the final \`next\` — in a CPU profile of the delivery, the socket writes (\`writev\`, one a subscriber, as the floor's) are the largest part, then \`ws\`'s framing of the two frames, graphql-ws's \`complete\` and the end's promise steps. The server CPU row says what that costs: the floor's is one frame's write alone. An idle subscriber holds one follower object (its expiry a shared timer), the callback its frame writer waits with, and graphql-ws's pending iteration; the one client process reading every socket shares the two cores with the server.`,
    );
    out();
    const p99 = percentile(latencies, 99);
    targets.push(
      `| fan-out ≤ 16 KiB per subscriber | ${(perRss / 1024).toFixed(1)} KiB (RSS) | ${verdict(perRss <= 16 * 1024)} |`,
    );
    targets.push(
      `| fan-out delivery p99 ≤ 1.5× the bare ws floor | ${ratio(p99, percentile(floor.latencies, 99))} (${p99.toFixed(0)} vs ${percentile(floor.latencies, 99).toFixed(0)} ms; server CPU per 1 000 subscribers ${fmt((cpuMs / SUBSCRIBERS) * 1000, 1)} vs ${fmt((floor.cpuMs / SUBSCRIBERS) * 1000, 1)} ms) | ${verdict(p99 <= 1.5 * percentile(floor.latencies, 99))} |`,
    );
  } finally {
    for (const s of sockets) s.close();
    await api.stop();
  }
}
