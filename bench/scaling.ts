import pg from 'pg';
import {
  CONCURRENCY,
  DURATION_MS,
  databaseUrl,
  fmt,
  out,
  pool,
  post,
  START,
  server,
  truncate,
  WARMUP_MS,
} from './common.js';
import type { Child } from './processes.js';

/**
 * Tasks accepted and completed per second with 1, 2 and 4 worker processes behind one api
 * process, all on one Postgres; beside them, what that Postgres's backends were waiting on
 * (sampled from pg_stat_activity) and how many WAL flushes it made, to show what saturates.
 */

/** Worker processes × RUNNER_CONCURRENCY: the same 32 slots as four processes, in one. */
const SHAPES = [
  { workers: 1, slots: 8 },
  { workers: 2, slots: 8 },
  { workers: 4, slots: 8 },
  { workers: 1, slots: 32 },
];
const SAMPLE_EVERY_MS = 10;

interface Round {
  workers: number;
  slots: number;
  acceptedPerSecond: number;
  completedPerSecond: number;
  backlog: number;
  walSyncsPerSecond: number;
  /** The commonest waits of the sampled active backends ("CPU" when waiting on nothing). */
  waits: string;
}

const count = async (status: string) =>
  (await pool.query('select count(*)::int as n from tasks where status = $1', [status])).rows[0]
    .n as number;

const walSyncs = async () =>
  Number((await pool.query('select wal_sync from pg_stat_wal')).rows[0].wal_sync);

/** Samples the active backends of this database until stopped; counts each wait. */
export function sampleWaits(): { stop(): Promise<Map<string, number>> } {
  const client = new pg.Client({ connectionString: databaseUrl });
  const waits = new Map<string, number>();
  let running = true;
  const loop = (async () => {
    await client.connect();
    while (running) {
      const { rows } = await client.query<{ wait: string | null }>(
        `select coalesce(wait_event_type || ':' || wait_event, 'CPU') as wait
           from pg_stat_activity
          where datname = current_database() and state = 'active' and pid <> pg_backend_pid()`,
      );
      for (const { wait } of rows) waits.set(wait!, (waits.get(wait!) ?? 0) + 1);
      await new Promise((r) => setTimeout(r, SAMPLE_EVERY_MS));
    }
    await client.end();
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return waits;
    },
  };
}

/** The four commonest waits, as shares of all samples: "IO:WALSync 40 %, CPU 30 %, …". */
export function describeWaits(waits: Map<string, number>): string {
  const total = [...waits.values()].reduce((a, b) => a + b, 0) || 1;
  return [...waits]
    .sort((a, b) => b[1] - a[1])
    .slice(0, 4)
    .map(([wait, n]) => `${wait} ${Math.round((n / total) * 100)} %`)
    .join(', ');
}

async function round(token: string, workers: number, slots: number): Promise<Round> {
  await truncate();
  const api = await server(`scaling-api-${workers}x${slots}`, { ROLE: 'api' });
  const workerProcesses: Child[] = [];
  try {
    for (let i = 0; i < workers; i++)
      workerProcesses.push(
        await server(`scaling-worker-${workers}x${slots}-${i}`, {
          ROLE: 'worker',
          RUNNER_CONCURRENCY: String(slots),
        }),
      );
    let measuring = false;
    let accepted = 0;
    let stop = false;
    const clients = Array.from({ length: CONCURRENCY }, async () => {
      while (!stop) {
        const answer = await post(
          `${api.url}/graphql`,
          { query: START, variables: { input: { kind: 'noop', input: {} } } },
          token,
        );
        if (!answer.data?.startTask) throw new Error(`startTask failed: ${JSON.stringify(answer)}`);
        if (measuring) accepted++;
      }
    });
    await new Promise((r) => setTimeout(r, WARMUP_MS));
    const completedBefore = await count('completed');
    const syncsBefore = await walSyncs();
    const sampler = sampleWaits();
    measuring = true;
    const began = performance.now();
    await new Promise((r) => setTimeout(r, DURATION_MS));
    measuring = false;
    const seconds = (performance.now() - began) / 1000;
    const completedAfter = await count('completed');
    const syncsAfter = await walSyncs();
    const waits = await sampler.stop();
    stop = true;
    await Promise.all(clients);
    return {
      workers,
      slots,
      acceptedPerSecond: accepted / seconds,
      completedPerSecond: (completedAfter - completedBefore) / seconds,
      backlog: await count('queued'),
      walSyncsPerSecond: (syncsAfter - syncsBefore) / seconds,
      waits: describeWaits(waits),
    };
  } finally {
    await Promise.all([api.stop(), ...workerProcesses.map((w) => w.stop())]);
  }
}

export async function scaling(token: string): Promise<void> {
  out(
    `## many processes: one api process, 1, 2 and 4 worker processes (and one with as many slots as four), one Postgres, ${CONCURRENCY} clients starting no-op tasks`,
  );
  out();
  const rounds: Round[] = [];
  for (const { workers, slots } of SHAPES) rounds.push(await round(token, workers, slots));
  const base = rounds[0]!;
  out(
    '| worker processes × RUNNER_CONCURRENCY | accepted/s | completed/s | vs 1 × 8 | queued at the end | WAL flushes/s | what active backends waited on |',
  );
  out('| --- | ---: | ---: | ---: | ---: | ---: | --- |');
  for (const r of rounds)
    out(
      `| ${r.workers} × ${r.slots} | ${fmt(r.acceptedPerSecond)} | ${fmt(r.completedPerSecond)} | ${(r.completedPerSecond / base.completedPerSecond).toFixed(2)}× | ${fmt(r.backlog)} | ${fmt(r.walSyncsPerSecond)} | ${r.waits} |`,
    );
  out();
  out(
    `Each round: ${WARMUP_MS / 1000} s warm-up, then ${DURATION_MS / 1000} s measured; accepted = startTask answers in the window, completed = tasks that reached COMPLETED in it. Waits: pg_stat_activity sampled every ${SAMPLE_EVERY_MS} ms, active backends of the benchmark database only; \`CPU\` is an active backend waiting on nothing. On this machine the 2 cores are shared by Postgres, every server process and the load generator, so more processes mostly share the same CPU; see docs/operating.md for what to do past one Postgres.`,
  );
  out();
}
