import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fmt, out, pool, post, START, server, targets, truncate, verdict } from './common.js';
import { describeWaits, sampleWaits } from './scaling.js';

/**
 * 1 000 tasks, each with a webhook to a loopback receiver that answers at once, delivered by
 * one worker process; beside the same tasks without webhooks, in the same run.
 */

const TASKS = 1_000;
const CLIENTS = 16;

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;

async function until(check: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 120_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what}: not done within 120 s`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

const count = async (query: string) => (await pool.query(query)).rows[0].n as number;

const walTotals = async () => {
  const { rows } = await pool.query('select wal_sync, wal_bytes from pg_stat_wal');
  return { syncs: Number(rows[0].wal_sync), bytes: Number(rows[0].wal_bytes) };
};

interface Round {
  acceptPerSecond: number;
  drainPerSecond: number;
  latencies: number[];
  deliveriesPerSecond: number;
  waits: string;
  /** WAL flushes and bytes per task, from first accept to all completed. */
  wal: { flushes: number; bytes: number };
}

async function round(token: string, hookUrl: string | null, arrivals: Map<string, number>) {
  await truncate();
  arrivals.clear();
  const api = await server('webhooks-api', { ROLE: 'api', WEBHOOK_ALLOW_PRIVATE: 'true' });
  const worker = await server('webhooks-worker', {
    ROLE: 'worker',
    RUNNER_CONCURRENCY: '8',
    WEBHOOK_ALLOW_PRIVATE: 'true',
  });
  try {
    const committed = new Map<string, number>();
    const walBefore = await walTotals();
    const sampler = sampleWaits();
    let next = 0;
    const started = performance.now();
    await Promise.all(
      Array.from({ length: CLIENTS }, async () => {
        while (next < TASKS) {
          next++;
          const input = {
            kind: 'noop',
            input: {},
            ...(hookUrl ? { webhook: { url: hookUrl } } : {}),
          };
          const answer = await post(
            `${api.url}/graphql`,
            { query: START, variables: { input } },
            token,
          );
          committed.set(answer.data.startTask.id, performance.now());
        }
      }),
    );
    const accepted = performance.now();
    await until(
      async () =>
        (await count(`select count(*)::int as n from tasks where status = 'completed'`)) >= TASKS,
      'drain',
    );
    const drained = performance.now();
    const waits = await sampler.stop();
    const walAfter = await walTotals();
    let deliveriesPerSecond = Number.NaN;
    if (hookUrl) {
      await until(async () => arrivals.size >= 2 * TASKS, 'deliveries');
      const last = Math.max(...arrivals.values());
      deliveriesPerSecond = (2 * TASKS) / ((last - started) / 1000);
    }
    const latencies = [...committed]
      .map(([id, at]) => (arrivals.get(`${id}:1`) ?? Number.NaN) - at)
      .filter(Number.isFinite)
      .sort((a, b) => a - b);
    return {
      acceptPerSecond: TASKS / ((accepted - started) / 1000),
      drainPerSecond: TASKS / ((drained - started) / 1000),
      latencies,
      deliveriesPerSecond,
      waits: describeWaits(waits),
      wal: {
        flushes: (walAfter.syncs - walBefore.syncs) / TASKS,
        bytes: (walAfter.bytes - walBefore.bytes) / TASKS,
      },
    } satisfies Round;
  } finally {
    await Promise.all([api.stop(), worker.stop()]);
  }
}

export async function webhooks(token: string): Promise<void> {
  out(`## webhooks: ${fmt(TASKS)} no-op tasks, each with a webhook to a loopback receiver`);
  out();
  const arrivals = new Map<string, number>();
  const receiver = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      const at = performance.now();
      const event = JSON.parse(body);
      arrivals.set(`${event.data.taskId}:${event.version === 1 ? 1 : 'last'}`, at);
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  const hookUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
  try {
    const plain = await round(token, null, arrivals);
    const hooked = await round(token, hookUrl, arrivals);
    out(
      '| tasks | accept (startTask, 16 clients) | drain (first accept → all completed) | commit → receiver, version 1 | deliveries/s (one worker) |',
    );
    out('| --- | ---: | ---: | ---: | ---: |');
    out(
      `| without webhooks | ${fmt(plain.acceptPerSecond)} /s | ${fmt(plain.drainPerSecond)} /s | – | – |`,
    );
    out(
      `| with a webhook each | ${fmt(hooked.acceptPerSecond)} /s (${(hooked.acceptPerSecond / plain.acceptPerSecond).toFixed(2)}×) | ${fmt(hooked.drainPerSecond)} /s (${(hooked.drainPerSecond / plain.drainPerSecond).toFixed(2)}×) | p50 ${fmt(percentile(hooked.latencies, 50), 1)} ms, p99 ${fmt(percentile(hooked.latencies, 99), 1)} ms | ${fmt(hooked.deliveriesPerSecond)} (2 a task: working, completed) |`,
    );
    out();
    out(
      'One api process takes the startTask calls (16 clients at once over HTTP), one worker process (ROLE=worker, RUNNER_CONCURRENCY=8, WEBHOOK_CONCURRENCY=16) runs the tasks and delivers, the receiver in the harness answers 204 at once. Commit → receiver: from the startTask answer (the task and its first delivery committed) to that delivery’s arrival. Deliveries/s: both deliveries of every task, from the first accept to the last arrival. Each is one run, without alternation: read the ratios as ±10 %.',
    );
    out();
    out(
      `What Postgres's active backends waited on (pg_stat_activity, sampled): without webhooks ${plain.waits}; with ${hooked.waits}. WAL per task: without ${fmt(plain.wal.flushes, 2)} flushes and ${fmt(plain.wal.bytes)} bytes, with ${fmt(hooked.wal.flushes, 2)} flushes and ${fmt(hooked.wal.bytes)} bytes.`,
    );
    out();
    const ok =
      hooked.acceptPerSecond >= 0.85 * plain.acceptPerSecond &&
      hooked.drainPerSecond >= 0.85 * plain.drainPerSecond;
    targets.push(
      `| webhooks: accept and drain within 15 % of no webhooks | accept ${(hooked.acceptPerSecond / plain.acceptPerSecond).toFixed(2)}×, drain ${(hooked.drainPerSecond / plain.drainPerSecond).toFixed(2)}× | ${verdict(ok)} |`,
    );
  } finally {
    receiver.close();
  }
}
