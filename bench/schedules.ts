import pg from 'pg';
import { createApp } from '../src/app.js';
import { loadConfig } from '../src/config/config.js';
import type { Clock } from '../src/schedules/clock.js';
import { defineTaskKind } from '../src/tasks/kinds.js';
import { recreateMigratedDatabase } from '../test/helpers/migrated-database.js';
import { BASE_URL, DB_NAME, fmt, out, pool, SERVER_ENV, targets, verdict } from './common.js';
import { median } from './load.js';

/**
 * What idle schedules cost (DESIGN §17): one process (ROLE=all) fires 10 schedules every
 * minute, alone and beside 10 000 that are not due in the window (daily, at other hours), in
 * alternating rounds (BENCH_SCHEDULE_ROUNDS, default 3). Postgres's own account of the
 * database (`pg_stat_database`: time executing SQL, commits, rows read, buffers touched) per
 * scheduled minute, and how late each occurrence's
 * task was started (its `created_at`, the firing transaction's start, against the instant the
 * occurrence came). The clock runs SPEED× the wall clock (a minute in 6 s), the same for both.
 */

const SPEED = 10;
const MINUTES = Number(process.env.BENCH_SCHEDULE_MINUTES ?? 6);
const ROUNDS = Number(process.env.BENCH_SCHEDULE_ROUNDS ?? 3);
const ACTIVE = 10;
const IDLE = 10_000;
const T0 = Date.parse('2026-05-04T10:00:30Z');
const NAME = `${DB_NAME}_schedules`;

/** The wall clock, SPEED× faster from `realStart` on, reading T0 then. */
class FastClock implements Clock {
  constructor(readonly realStart: number) {}
  now(): number {
    return T0 + (Date.now() - this.realStart) * SPEED;
  }
  /** The wall-clock instant the clock reads `at`. */
  real(at: number): number {
    return this.realStart + (at - T0) / SPEED;
  }
  at(at: number, fn: () => void): () => void {
    const timer = setTimeout(() => fn(), Math.max(0, this.real(at) - Date.now()));
    return () => clearTimeout(timer);
  }
}

const noop = defineTaskKind({
  name: 'noop',
  description: 'Does nothing (benchmark).',
  inputSchema: { type: 'object' },
  run: async () => null,
});

interface Stats {
  active: number;
  commits: number;
  rows: number;
  /** Rows read of the database's own tables, without the system catalogs'. */
  tableRows: number;
  buffers: number;
}

async function stats(client: pg.Client): Promise<Stats> {
  await client.query('select pg_stat_clear_snapshot()');
  const { rows } = await client.query<Record<string, string>>(
    `select active_time, xact_commit, tup_returned + tup_fetched as rows, blks_hit + blks_read as buffers
       from pg_stat_database where datname = $1`,
    [NAME],
  );
  const r = rows[0]!;
  const tables = await client.query<{ rows: string }>(
    `select coalesce(sum(seq_tup_read + coalesce(idx_tup_fetch, 0)), 0) as rows
       from pg_stat_user_tables`,
  );
  return {
    active: Number(r.active_time),
    commits: Number(r.xact_commit),
    rows: Number(r.rows),
    tableRows: Number(tables.rows[0]!.rows),
    buffers: Number(r.buffers),
  };
}

interface Run {
  perMinute: Stats;
  started: number;
  lateMs: number[];
}

async function once(idle: number): Promise<Run> {
  const url = await recreateMigratedDatabase(BASE_URL, NAME);
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    // The idle ones: daily at a minute of an hour other than 10 (UTC), as pages of owners.
    await client.query(
      `insert into schedules (owner, key, cron, timezone, kind, next_run_at)
       select 'owner-' || (i % 100), 'idle-' || i, m || ' ' || h || ' * * *', 'UTC', 'noop',
              date '2026-05-05' + make_interval(hours => h, mins => m)
       from (select i, i % 60 as m, 11 + i % 12 as h from generate_series(1, $1::int) i) s`,
      [idle],
    );
    await client.query('analyze schedules');
    const config = loadConfig({
      ...SERVER_ENV,
      DATABASE_URL: url,
      ROLE: 'all',
      LOG_LEVEL: 'warn',
    } as Record<string, string>);
    const clock = new FastClock(Date.now());
    const app = await createApp({ config, kinds: [noop], scheduleClock: clock });
    const owner = { id: 'alice', admin: false };
    for (let i = 0; i < ACTIVE; i++)
      await app.schedules.upsert(owner, {
        key: `active-${i}`,
        cron: '* * * * *',
        kind: 'noop',
        missed: 'all',
      });
    const first = Math.ceil(clock.now() / 60_000) * 60_000;
    // From the first minute to just before the last, so the window holds MINUTES occurrences.
    await new Promise((r) => setTimeout(r, clock.real(first) - Date.now() - 100));
    const before = await stats(client);
    await new Promise((r) =>
      setTimeout(r, clock.real(first + MINUTES * 60_000) - Date.now() - 100),
    );
    await app.stop();
    // A backend's counters reach pg_stat_database when it goes idle or disconnects.
    await new Promise((r) => setTimeout(r, 1_500));
    const after = await stats(client);
    const { rows } = await client.query<{ key: string; created: Date }>(
      `select idempotency_key as key, created_at as created from tasks where schedule_key is not null`,
    );
    const lateMs = rows
      .map((r) => r.created.getTime() - clock.real(Date.parse(r.key.slice(-24))))
      .sort((a, b) => a - b);
    const per = (k: keyof Stats) => (after[k] - before[k]) / MINUTES;
    return {
      perMinute: {
        active: per('active'),
        commits: per('commits'),
        rows: per('rows'),
        tableRows: per('tableRows'),
        buffers: per('buffers'),
      },
      started: rows.length,
      lateMs,
    };
  } finally {
    await client.end();
    await pool.query(`drop database if exists ${NAME} with (force)`);
  }
}

const pct = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;

/** The median of each per-minute figure over the rounds of one configuration. */
function medianRun(runs: readonly Run[]): Run {
  const of = (k: keyof Stats) => median(runs.map((r) => r.perMinute[k]));
  return {
    perMinute: {
      active: of('active'),
      commits: of('commits'),
      rows: of('rows'),
      tableRows: of('tableRows'),
      buffers: of('buffers'),
    },
    started: median(runs.map((r) => r.started)),
    lateMs: runs.flatMap((r) => r.lateMs).sort((a, b) => a - b),
  };
}

export async function schedules(): Promise<void> {
  out(`## schedules: ${ACTIVE} firing every minute, alone and beside ${fmt(IDLE)} idle`);
  out();
  // Rounds alternate the two, each on a database of its own: one window of a few scheduled
  // minutes moved either figure by a third from run to run, which no single pair can tell
  // from what the idle schedules cost.
  const alones: Run[] = [];
  const crowdeds: Run[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    alones.push(await once(0));
    crowdeds.push(await once(IDLE));
  }
  const alone = medianRun(alones);
  const crowded = medianRun(crowdeds);
  out(
    '| schedules | SQL time ms/min | commits/min | rows read/min | of which its tables | buffers/min | tasks started | late p50 ms | late p99 ms | late max ms |',
  );
  out('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
  for (const [label, r] of [
    [`${ACTIVE}`, alone],
    [`${ACTIVE} + ${fmt(IDLE)} idle`, crowded],
  ] as const)
    out(
      `| ${label} | ${fmt(r.perMinute.active, 1)} | ${fmt(r.perMinute.commits)} | ${fmt(r.perMinute.rows)} | ${fmt(r.perMinute.tableRows)} | ${fmt(r.perMinute.buffers)} | ${r.started} | ${fmt(pct(r.lateMs, 50))} | ${fmt(pct(r.lateMs, 99))} | ${fmt(r.lateMs.at(-1) ?? Number.NaN)} |`,
    );
  out();
  const ratios = (k: keyof Stats) =>
    alones.map((a, i) => crowdeds[i]!.perMinute[k] / a.perMinute[k]);
  const list = (xs: number[]) => xs.map((x) => `${x.toFixed(2)}×`).join(', ');
  out(
    `One process (ROLE=all, in the harness's process), its clock ${SPEED}× the wall clock (a minute in ${60 / SPEED} s), ${MINUTES} minutes measured after the first occurrence; the ${ACTIVE} schedules start a no-op task each minute, which runs. Per minute: pg_stat_database of the benchmark's database over the window (time executing SQL, commits, tuples returned and fetched, buffers hit and read), everything the process did (firing, the tasks' claims and ends, the listener's heartbeat). ${ROUNDS} rounds, each running the two in turn on a database of its own; the figures are medians over the rounds, the ratios the median of each round's (SQL time ${list(ratios('active'))}; rows read ${list(ratios('rows'))}, of its tables ${list(ratios('tableRows'))}). Rows read are pg_stat_database's tuples returned and fetched; of those, most are the system catalogs' (pg_attribute, pg_class…), which a backend reads as it fills its caches, so a pool connection opened within the window moved the figure by half from round to round; the target counts the rows read of the database's own tables (pg_stat_user_tables: sequentially read and fetched by index), what the schedules make Postgres read. Late: a task's created_at (the firing transaction's start) after the wall-clock instant its occurrence came, over every round.`,
  );
  out();
  const ratio = median(ratios('active'));
  const rowsRatio = median(ratios('tableRows'));
  targets.push(
    `| ${fmt(IDLE)} idle schedules cost no more per minute than ${ACTIVE} (SQL time, rows read of its tables) | ${ratio.toFixed(2)}× time, ${rowsRatio.toFixed(2)}× rows | ${verdict(ratio <= 1.25 && rowsRatio <= 1.25)} |`,
    `| an occurrence's task starts at most ~1 s late (p99, beside ${fmt(IDLE)} idle) | ${fmt(pct(crowded.lateMs, 99))} ms | ${verdict(pct(crowded.lateMs, 99) <= 1_000)} |`,
  );
}
