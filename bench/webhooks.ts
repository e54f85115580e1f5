import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  fmt,
  out,
  PROFILE,
  pool,
  post,
  postgresBusyMs,
  START,
  server,
  targets,
  truncate,
  until,
  verdict,
} from './common.js';
import { PROFILE_DIR, spawnChild } from './processes.js';
import { describeWaits, sampleWaits } from './scaling.js';

/**
 * 1 000 tasks, each with a webhook to a loopback receiver that answers at once, delivered by
 * one worker process; beside the same tasks without webhooks, in the same run.
 */

const TASKS = 1_000;
/**
 * Tasks of the same kind each round runs first, unmeasured, so that the rates are those of
 * servers whose code is compiled, as the accept row's warm-up gives it: a fresh process runs
 * its first thousand deliveries at a fraction of its later speed.
 */
const WARMUP_TASKS = Number(process.env.BENCH_WEBHOOK_WARMUP ?? 1_000);
const CLIENTS = 16;
/** Rounds with and without webhooks, in pairs (BENCH_WEBHOOK_PAIRS, default 3). */
const PAIRS = Number(process.env.BENCH_WEBHOOK_PAIRS ?? 3);

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;

const count = async (query: string) => (await pool.query(query)).rows[0].n as number;

const walTotals = async () => {
  const { rows } = await pool.query('select wal_sync, wal_bytes from pg_stat_wal');
  return { syncs: Number(rows[0].wal_sync), bytes: Number(rows[0].wal_bytes) };
};

/** Busy CPU time of the whole machine so far, in ms (every process: Postgres's too). */
function machineBusyMs(): number {
  const [, ...fields] = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/);
  const [user, nice, system, , , irq, softirq, steal] = fields.map(Number) as number[];
  return ((user! + nice! + system! + irq! + softirq! + steal!) * 1000) / 100;
}

const cpuMs = (u: { user: number; system: number }) => (u.user + u.system) / 1000;

interface Round {
  acceptPerSecond: number;
  drainPerSecond: number;
  latencies: number[];
  deliveriesPerSecond: number;
  waits: string;
  /** WAL flushes and bytes per task, from first accept to all completed. */
  wal: { flushes: number; bytes: number };
  /** CPU ms per task from first accept to all completed: each process, and the machine. */
  cpu: { api: number; worker: number; harness: number; postgres: number; machine: number };
}

type Kind = 'plain' | 'floor' | 'held' | 'hooked';

/**
 * One round of TASKS tasks: `plain` without webhooks; `hooked` with one each, delivered;
 * `held` with one each to a receiver that holds every request, so the worker's 16 attempts
 * wait and nothing more is claimed: the cost of writing the outbox alone; `floor` without
 * webhooks, while a bare node:http client in a process of its own posts two requests a task,
 * as the tasks are accepted, to the same receiver: what sending two requests a task costs this
 * machine at the least, with no outbox, no signature and no statement.
 */
async function round(
  token: string,
  kind: Kind,
  urls: { hook: string; held: string; floor: string },
  arrivals: Map<string, number>,
  release: () => void,
) {
  const hookUrl =
    kind === 'plain' || kind === 'floor' ? null : kind === 'held' ? urls.held : urls.hook;
  await truncate();
  arrivals.clear();
  const api = await server('webhooks-api', { ROLE: 'api', WEBHOOK_ALLOW_PRIVATE: 'true' });
  const worker = await server('webhooks-worker', {
    ROLE: 'worker',
    RUNNER_CONCURRENCY: '8',
    WEBHOOK_ALLOW_PRIVATE: 'true',
  });
  const poster =
    kind === 'floor'
      ? await spawnChild('webhooks-floor', 'bench/http-floor.ts', {
          env: { FLOOR_URL: urls.floor },
        })
      : undefined;
  try {
    let acceptedSoFar = 0;
    const start = async (count: number, committed?: Map<string, number>) => {
      let next = 0;
      await Promise.all(
        Array.from({ length: CLIENTS }, async () => {
          while (next < count) {
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
            committed?.set(answer.data.startTask.id, performance.now());
            // The floor's requests follow the accepted tasks, eight tasks' worth at a time.
            if (poster && ++acceptedSoFar % 8 === 0) void poster.ask('post', { n: 16 });
          }
        }),
      );
    };
    // Every task was started before this is asked, so none working is all completed (noop
    // tasks neither fail nor ask): one probe of the index of working tasks, where counting the
    // completed ones scanned the table, 100 times a second, on the cores the servers share.
    const noneWorking = async () =>
      (await count(`select count(*)::int as n from tasks where status = 'working'`)) === 0;
    if (WARMUP_TASKS > 0) {
      await start(WARMUP_TASKS);
      await until(noneWorking, 'warm-up');
      if (kind === 'hooked' || kind === 'floor')
        await until(async () => arrivals.size >= 2 * WARMUP_TASKS, 'warm-up deliveries');
      arrivals.clear();
    }
    const committed = new Map<string, number>();
    const walBefore = await walTotals();
    const sampler = sampleWaits();
    const tag = kind;
    if (PROFILE) await Promise.all([api.ask('profile:start'), worker.ask('profile:start')]);
    // The floor's sender is counted with the worker: it stands in for the worker's deliveries.
    const senders = poster ? [worker, poster] : [worker];
    const sendersCpu = async () =>
      (await Promise.all(senders.map((c) => c.ask<any>('cpu')))).reduce((t, u) => t + cpuMs(u), 0);
    const apiBefore = cpuMs(await api.ask<any>('cpu'));
    const sendersBefore = await sendersCpu();
    const harnessBefore = process.cpuUsage();
    const machineBefore = machineBusyMs();
    const postgresBefore = postgresBusyMs();
    const started = performance.now();
    await start(TASKS, committed);
    const accepted = performance.now();
    await until(noneWorking, 'drain');
    const drained = performance.now();
    const machineAfter = machineBusyMs();
    const postgresAfter = postgresBusyMs();
    const harness = cpuMs(process.cpuUsage(harnessBefore));
    const apiAfter = cpuMs(await api.ask<any>('cpu'));
    const sendersAfter = await sendersCpu();
    if (PROFILE)
      await Promise.all(
        [api, worker].map((child) =>
          child.ask('profile:stop', {
            file: `${PROFILE_DIR}/webhooks-${tag}-${child.name}.cpuprofile`,
          }),
        ),
      );
    const waits = await sampler.stop();
    const walAfter = await walTotals();
    let deliveriesPerSecond = Number.NaN;
    if (kind === 'held') release();
    if (kind === 'floor') await until(async () => arrivals.size >= 2 * TASKS, 'floor requests');
    if (kind === 'hooked') {
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
      cpu: {
        api: (apiAfter - apiBefore) / TASKS,
        worker: (sendersAfter - sendersBefore) / TASKS,
        harness: harness / TASKS,
        postgres: (postgresAfter - postgresBefore) / TASKS,
        machine: (machineAfter - machineBefore) / TASKS,
      },
    } satisfies Round;
  } finally {
    await Promise.all([api.stop(), worker.stop(), poster?.stop()]);
  }
}

export async function webhooks(token: string): Promise<void> {
  out(`## webhooks: ${fmt(TASKS)} no-op tasks, each with a webhook to a loopback receiver`);
  out();
  const arrivals = new Map<string, number>();
  let held: Array<() => void> = [];
  const release = () => {
    for (const answer of held) answer();
    held = [];
  };
  const receiver = createServer((req, res) => {
    if (req.url === '/held') {
      held.push(() => res.writeHead(204).end());
      req.resume();
      return;
    }
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
  const base = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  const urls = { hook: `${base}/hook`, held: `${base}/held`, floor: `${base}/floor` };
  try {
    // Pairs alternate which goes first, so a drift in the machine's load over the run does not
    // favour one side; each ratio is within a pair, and the row reports their median.
    const pairs: Array<Record<Kind, Round>> = [];
    const orders: Kind[][] = [
      ['plain', 'floor', 'held', 'hooked'],
      ['hooked', 'held', 'floor', 'plain'],
    ];
    for (let i = 0; i < PAIRS; i++) {
      const set = {} as Record<Kind, Round>;
      for (const kind of orders[i % 2]!) {
        set[kind] = await round(token, kind, urls, arrivals, release);
      }
      pairs.push(set);
    }
    const of = (kind: Kind) => pairs.map((p) => p[kind]);
    const med = (kind: Kind, pick: (r: Round) => number) => median(of(kind).map(pick));
    const ratios = (kind: Kind, pick: (r: Round) => number) =>
      pairs.map((p) => pick(p[kind]) / pick(p.plain));
    const accept = (r: Round) => r.acceptPerSecond;
    const drain = (r: Round) => r.drainPerSecond;
    const list = (values: number[]) => values.map((r) => r.toFixed(2)).join(', ');
    const latencies = of('hooked')
      .flatMap((r) => r.latencies)
      .sort((a, b) => a - b);
    const rate = (kind: Kind, pick: (r: Round) => number) =>
      kind === 'plain'
        ? `${fmt(med(kind, pick))} /s`
        : `${fmt(med(kind, pick))} /s (${median(ratios(kind, pick)).toFixed(2)}×)`;
    out(
      '| tasks | accept (startTask, 16 clients) | drain (first accept → all completed) | commit → receiver, version 1 | deliveries/s (one worker) |',
    );
    out('| --- | ---: | ---: | ---: | ---: |');
    out(`| without webhooks | ${rate('plain', accept)} | ${rate('plain', drain)} | – | – |`);
    out(
      `| floor: without webhooks, while a bare node:http client in a process of its own posts 2 requests a task to the receiver | ${rate('floor', accept)} | ${rate('floor', drain)} | – | – |`,
    );
    out(
      `| with a webhook each, none delivered (the outbox written, the receiver holds every request) | ${rate('held', accept)} | ${rate('held', drain)} | – | – |`,
    );
    out(
      `| with a webhook each, delivered | ${rate('hooked', accept)} | ${rate('hooked', drain)} | p50 ${fmt(percentile(latencies, 50), 1)} ms, p99 ${fmt(percentile(latencies, 99), 1)} ms | ${fmt(med('hooked', (r) => r.deliveriesPerSecond))} (2 a task: working, completed) |`,
    );
    out();
    out(
      `One api process takes the startTask calls (16 clients at once over HTTP), one worker process (ROLE=worker, RUNNER_CONCURRENCY=8, WEBHOOK_CONCURRENCY=16) runs the tasks and delivers, the receiver in the harness answers 204 at once. Each round first runs ${fmt(WARMUP_TASKS)} tasks of its own kind unmeasured (BENCH_WEBHOOK_WARMUP), so that the figures are those of warm servers. Commit → receiver: from the startTask answer (the task and its first delivery committed) to that delivery’s arrival. Deliveries/s: both deliveries of every task, from the first accept to the last arrival. The floor round sends what the delivered round sends, over HTTP, with nothing else: no outbox, no signature, no statement; it is what two requests a task cost this machine, the most a deliverer could keep. ${PAIRS} sets of the four rounds, alternating their order; rates are medians over rounds, ratios the median of the ratios within each set (delivered: accept ${list(ratios('hooked', accept))}, drain ${list(ratios('hooked', drain))}; none delivered: accept ${list(ratios('held', accept))}, drain ${list(ratios('held', drain))}; floor: accept ${list(ratios('floor', accept))}, drain ${list(ratios('floor', drain))}), latencies over every delivery of every delivered round.`,
    );
    out();
    const last = pairs.at(-1)!;
    const wal = (kind: Kind) =>
      `${fmt(
        med(kind, (r) => r.wal.flushes),
        2,
      )} flushes and ${fmt(med(kind, (r) => r.wal.bytes))} bytes`;
    out(
      `What Postgres's active backends waited on (pg_stat_activity, sampled, last set): without webhooks ${last.plain.waits}; floor ${last.floor.waits}; none delivered ${last.held.waits}; delivered ${last.hooked.waits}. WAL per task (medians): without ${wal('plain')}, none delivered ${wal('held')}, delivered ${wal('hooked')}.`,
    );
    out();
    const cpu = (kind: Kind) => {
      const part = (pick: (r: Round) => number) => fmt(med(kind, pick), 2);
      return `api ${part((r) => r.cpu.api)}, worker ${part((r) => r.cpu.worker)}, harness ${part((r) => r.cpu.harness)}, Postgres ${part((r) => r.cpu.postgres)}, the rest ${part((r) => r.cpu.machine - r.cpu.api - r.cpu.worker - r.cpu.harness - r.cpu.postgres)}; machine ${part((r) => r.cpu.machine)}`;
    };
    out(
      `CPU ms per task, first accept → all completed (medians; harness: the clients and the receiver; worker: in the floor round with the bare client's process; Postgres: every process of that name; the rest: whatever else shares the machine): without webhooks ${cpu('plain')}; floor ${cpu('floor')}; none delivered ${cpu('held')}; delivered ${cpu('hooked')}.`,
    );
    out();
    const acceptRatio = median(ratios('hooked', accept));
    const drainRatio = median(ratios('hooked', drain));
    const p50 = percentile(latencies, 50);
    targets.push(
      `| webhooks: commit → receiver p50 ≤ 10 ms | p50 ${fmt(p50, 1)} ms, p99 ${fmt(percentile(latencies, 99), 1)} ms (accept ${acceptRatio.toFixed(2)}×, drain ${drainRatio.toFixed(2)}× of no webhooks, medians of ${PAIRS} sets; with the outbox written but nothing delivered ${median(ratios('held', accept)).toFixed(2)}× and ${median(ratios('held', drain)).toFixed(2)}×; the floor, two bare requests a task, ${median(ratios('floor', accept)).toFixed(2)}× and ${median(ratios('floor', drain)).toFixed(2)}×) | ${verdict(p50 <= 10)} |`,
    );
  } finally {
    receiver.close();
  }
}
