import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  fmt,
  out,
  PROFILE,
  pool,
  postgresBusyMs,
  resetDatabase,
  server,
  targets,
  truncate,
  until,
  verdict,
} from './common.js';
import { median } from './load.js';
import { PROFILE_DIR, spawnChild } from './processes.js';

/**
 * The deliverer alone: a backlog of pending deliveries (two a task, as a task's working and
 * completed changes make them, as after a receiver's outage) sent by one worker process to a
 * loopback receiver, in CPU a delivery of that process and of Postgres, beside a bare
 * node:http client (keep-alive, 16 at a time) posting bodies of the same size to the same
 * receiver from a process of its own: the floor. `npx tsx bench/deliveries.ts` runs it alone.
 */

const DELIVERIES = Number(process.env.BENCH_DELIVERIES ?? 6_000);
const WARMUP = 2_000;
/** Sets of one deliverer round and one floor round. */
const SETS = 3;

async function enqueue(n: number, url: string): Promise<void> {
  // n / 2 completed tasks, each with a webhook and its two deliveries pending.
  await pool.query(
    `with t as (
       insert into tasks (id, owner, kind, input, ttl_ms, created_at, last_updated_at, expires_at,
                          poll_interval_ms, status, version, result, progress, max_attempts,
                          timeout_ms)
       select gen_random_uuid(), 'alice', 'noop', '{}', 3600000, now(), now(),
              now() + interval '1 hour', 1000, 'completed', 2, 'null', 1, 3, 60000
       from generate_series(1, $1::int)
       returning *
     ), w as (
       insert into task_webhooks (id, task_id, url, secret, after_version)
       select gen_random_uuid(), t.id, $2, 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', 0 from t
       returning id, task_id
     ), d as (
       insert into task_deliveries (id, task_id, webhook_id, version, status, snapshot)
       select gen_random_uuid(), t.id, w.id, v.version, v.status,
              to_jsonb(t) - array['input', 'answers', 'idempotency_key', 'worker_id', 'lease_expires_at']
       from t join w on w.task_id = t.id,
            (values (1, 'working'), (2, 'completed')) as v(version, status)
       returning 1
     )
     select count(*), pg_notify('taskhandle_delivery', '') from d`,
    [n / 2, url],
  );
}

const delivered = async () =>
  Number(
    (await pool.query(`select count(*)::int as n from task_deliveries where state = 'delivered'`))
      .rows[0].n,
  );

export async function deliveries(): Promise<void> {
  let arrived = 0;
  const receiver = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      arrived++;
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
  await truncate();
  const worker = await server('deliveries-worker', {
    ROLE: 'worker',
    WEBHOOK_ALLOW_PRIVATE: 'true',
  });
  try {
    // Arrivals are counted here; the database is asked only once they are all in (a count of
    // the outbox every few milliseconds would cost Postgres more than some of what is measured).
    const settled = async (n: number) => {
      await until(async () => arrived >= n, 'deliveries', { withinMs: 300_000 });
      await until(async () => (await delivered()) >= n, 'recorded', { withinMs: 300_000 });
    };
    await enqueue(WARMUP, url);
    await settled(WARMUP);
    let sent = WARMUP;
    /** One round of the deliverer: DELIVERIES more, from their enqueueing to their record. */
    const round = async (profile: boolean) => {
      if (profile) await worker.ask('profile:start');
      const before = await worker.ask<{ user: number; system: number }>('cpu');
      const pgBefore = postgresBusyMs();
      const started = performance.now();
      await enqueue(DELIVERIES, url);
      sent += DELIVERIES;
      await settled(sent);
      const seconds = (performance.now() - started) / 1000;
      const after = await worker.ask<{ user: number; system: number }>('cpu');
      const pgCpu = (postgresBusyMs() - pgBefore) / DELIVERIES;
      if (profile)
        await worker.ask('profile:stop', { file: `${PROFILE_DIR}/deliveries-worker.cpuprofile` });
      const cpu = (after.user - before.user + after.system - before.system) / 1000 / DELIVERIES;
      return { perSecond: DELIVERIES / seconds, cpu, pgCpu };
    };
    /** One round of the floor, from a process of its own (warmed up first, as the worker). */
    const floorRound = async () => {
      const floor = await spawnChild('deliveries-floor', 'bench/http-floor.ts', {
        env: { FLOOR_URL: url, FLOOR_REQUESTS: String(DELIVERIES), FLOOR_WARMUP: String(WARMUP) },
      });
      try {
        return await floor.ask<{ cpuMs: number; perSecond: number }>('result');
      } finally {
        await floor.stop();
      }
    };
    // Sets of one round each, alternating which goes first: a burst of load on the shared
    // machine falls on both sides of some set, and the ratio is taken within each set.
    const ours: Array<Awaited<ReturnType<typeof round>>> = [];
    const bare: Array<Awaited<ReturnType<typeof floorRound>>> = [];
    for (let set = 0; set < SETS; set++) {
      if (set % 2 === 1) bare.push(await floorRound());
      ours.push(await round(PROFILE && set === 1));
      if (set % 2 === 0) bare.push(await floorRound());
    }
    const ratios = ours.map((o, i) => o.cpu / bare[i]!.cpuMs);
    const ratio = median(ratios);
    const cpu = median(ours.map((o) => o.cpu));
    const bareCpu = median(bare.map((b) => b.cpuMs));
    out(`## deliveries: a backlog of ${fmt(DELIVERIES)} pending deliveries, one worker process`);
    out();
    out('| sender | deliveries/s | CPU ms a delivery: sender | Postgres | sender vs floor |');
    out('| --- | ---: | ---: | ---: | ---: |');
    out(
      `| the deliverer (ROLE=worker, WEBHOOK_CONCURRENCY=16): claim, sign, post, log, record | ${fmt(median(ours.map((o) => o.perSecond)))} | ${fmt(cpu, 3)} | ${fmt(median(ours.map((o) => o.pgCpu)), 3)} | ${ratio.toFixed(2)}× |`,
    );
    out(
      `| floor: bare node:http client, keep-alive, 16 at a time, same body size | ${fmt(median(bare.map((b) => b.perSecond)))} | ${fmt(bareCpu, 3)} | – | 1.00× |`,
    );
    out();
    out(
      `${fmt(WARMUP)} deliveries warm the worker up first. The deliveries are in the outbox before the measured part starts (so Postgres's share is the claims and the outcomes, not the writing), the receiver in the harness answers 204 at once, and the floor posts from a process of its own to the same receiver. Postgres: CPU of every process of that name over the measured part. ${SETS} sets of a round of each, alternating which goes first; figures are medians over the rounds, the ratio the median of the ratios within each set (sender CPU ms a delivery, set by set: ${ours.map((o) => fmt(o.cpu, 3)).join(', ')}; floor ${bare.map((b) => fmt(b.cpuMs, 3)).join(', ')}; ratios ${ratios.map((r) => r.toFixed(2)).join(', ')}). The first set's round is the deliverer's first after its warm-up.`,
    );
    out();
    targets.push(
      `| webhooks: deliverer CPU ≤ 2× bare client | ${ratio.toFixed(2)}× (the worker's CPU a delivery, deliveries row: ${fmt(cpu, 3)} ms against the bare client's ${fmt(bareCpu, 3)} ms) | ${verdict(ratio <= 2)} |`,
    );
  } finally {
    await worker.stop();
    receiver.close();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await resetDatabase();
  await deliveries();
  await pool.end();
}
