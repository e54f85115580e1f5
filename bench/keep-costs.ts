import type pg from 'pg';
import { fmt, out, pool } from './common.js';

/**
 * What each thing we keep per task costs Postgres (issue 45): graphile-worker keeps a job's
 * row until it ends, with three indexes, and deletes it then; we keep every task's row, its
 * result and versions for its TTL, an index entry for each list page, a lease, and an event
 * for every change. Each row of the table is one of those, measured alone: the statements a
 * start, a claim and an outcome run (500 rows a statement, as the worker batches them), on
 * `tasks` as it ships and on a copy with its primary key only, with and without a
 * notification per row, in one backend, timed from this side (each statement's wall time,
 * which on an idle server is the backend's work) with the WAL it wrote. Medians of five
 * rounds, each on emptied tables.
 */

const TASKS = 10_000;
const BATCH = 500;
const ROUNDS = 5;

interface Cost {
  /** µs a task. */
  us: number;
  /** WAL bytes a task. */
  wal: number;
}

const INSERT = (table: string) => `
  insert into ${table} (id, owner, kind, input, ttl_ms, expires_at, poll_interval_ms, max_attempts, timeout_ms)
  select gen_random_uuid(), 'alice', 'noop', '{}', 3600000, now() + interval '1 hour', 1000, 3, 900000
  from generate_series(1, ${BATCH})`;

const CLAIM = (table: string) => `
  update ${table} t set worker_id = 'bench', lease_expires_at = now() + interval '30 seconds',
    attempt = t.attempt + 1, version = t.version + 1, last_updated_at = now()
  where t.id = any($1::uuid[])`;

const OUTCOME = (table: string, notify: boolean) => `
  update ${table} t set status = 'completed', result = 'null'::jsonb, progress = 1,
    worker_id = null, lease_expires_at = null, version = t.version + 1, last_updated_at = now()
  where t.id = any($1::uuid[])
  ${notify ? `returning pg_notify('taskhandle_bench_keep', t.id::text || ':' || t.version::text)` : ''}`;

const PURGE = (table: string) => `
  delete from ${table} where id in (select id from ${table} order by expires_at limit ${BATCH})`;

/** Runs `statement` for every batch of `ids` (or `batches` times with none): µs and WAL bytes a task. */
async function cost(
  client: pg.PoolClient,
  statement: string,
  ids: string[][] | number,
): Promise<Cost> {
  const batches = typeof ids === 'number' ? Array.from({ length: ids }, () => null) : ids;
  const [{ lsn: before }] = (await client.query('select pg_current_wal_lsn() as lsn')).rows;
  let ms = 0;
  for (const batch of batches) {
    const t0 = performance.now();
    await client.query(statement, batch ? [batch] : []);
    ms += performance.now() - t0;
  }
  const [{ bytes }] = (
    await client.query('select pg_wal_lsn_diff(pg_current_wal_lsn(), $1) as bytes', [before])
  ).rows;
  return { us: (ms * 1000) / TASKS, wal: Number(bytes) / TASKS };
}

/**
 * The ids in the order the worker claims them, and so records their outcomes: `tasks_ready`'s
 * order, its ties by place in the table. That order is what the indexes pay for: the same
 * updates in id order (random places in every index) cost the claim's index entries about a
 * quarter as much, which is what this table reported until it took the worker's order.
 */
async function idsOf(client: pg.PoolClient, table: string): Promise<string[][]> {
  const { rows } = await client.query<{ id: string }>(
    `select id from ${table} order by priority desc, run_at, ctid`,
  );
  const batches: string[][] = [];
  for (let i = 0; i < rows.length; i += BATCH)
    batches.push(rows.slice(i, i + BATCH).map((r) => r.id));
  return batches;
}

type Measures = Record<string, Cost>;

/** One round: each table's start, claim, outcome (with or without notifications) and purge. */
async function round(client: pg.PoolClient, listener: pg.PoolClient): Promise<Measures> {
  const m: Measures = {};
  for (const [table, name] of [
    ['tasks', 'full'],
    ['keep_lean', 'lean'],
  ] as const) {
    for (const notify of [false, true]) {
      await client.query(`truncate ${table}`);
      await client.query(`vacuum analyze ${table}`);
      const start = await cost(client, INSERT(table), TASKS / BATCH);
      const ids = await idsOf(client, table);
      const claim = await cost(client, CLAIM(table), ids);
      const outcome = await cost(client, OUTCOME(table, notify), ids);
      if (notify) {
        m[`${name} outcome+notify`] = outcome;
        continue;
      }
      const [{ bytes }] = (
        await client.query('select pg_total_relation_size($1::regclass) as bytes', [table])
      ).rows;
      const purge = await cost(client, PURGE(table), TASKS / BATCH);
      Object.assign(m, {
        [`${name} start`]: start,
        [`${name} claim`]: claim,
        [`${name} outcome`]: outcome,
        [`${name} purge`]: purge,
        [`${name} bytes`]: { us: 0, wal: Number(bytes) / TASKS },
      });
    }
  }
  // The notifications were read (as the api's listener reads them), not left queued.
  await listener.query('select 1');
  return m;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1] ?? Number.NaN;

export async function keepCosts(): Promise<void> {
  const client = await pool.connect();
  const listener = await pool.connect();
  try {
    await client.query('drop table if exists keep_lean');
    await client.query(
      'create table keep_lean (like tasks including defaults including constraints, primary key (id))',
    );
    await listener.query('listen taskhandle_bench_keep');
    const rounds: Measures[] = [];
    for (let i = 0; i < ROUNDS; i++) rounds.push(await round(client, listener));
    const at = (key: string): Cost => ({
      us: median(rounds.map((r) => r[key]!.us)),
      wal: median(rounds.map((r) => r[key]!.wal)),
    });
    const less = (a: Cost, b: Cost): Cost => ({ us: a.us - b.us, wal: a.wal - b.wal });
    const rows: [string, Cost][] = [
      ['the row, on start (primary key only)', at('lean start')],
      ["the row's other index entries, on start", less(at('full start'), at('lean start'))],
      ['the lease, on claim (the new row version, primary key only)', at('lean claim')],
      [
        "the claim's index entries (no room for a HOT update)",
        less(at('full claim'), at('lean claim')),
      ],
      ["the outcome: the kept row's new version (primary key only)", at('lean outcome')],
      ["the outcome's index entries", less(at('full outcome'), at('lean outcome'))],
      [
        'an event for the change (a NOTIFY a row)',
        less(at('full outcome+notify'), at('full outcome')),
      ],
      ["keeping it for its TTL: the purge's delete", at('full purge')],
    ];
    const total = rows.reduce((sum, [, c]) => sum + c.us, 0);
    out('## What we keep, per task');
    out();
    out(
      `Postgres's share of each thing a task keeps that a queue like graphile-worker does not (or keeps for less time), measured alone: ${fmt(TASKS)} tasks, statements of ${BATCH} rows, on \`tasks\` as it ships and on a copy with its primary key only (\`full − lean\` is what its other indexes add), one backend, medians of ${ROUNDS} rounds (bench/keep-costs.ts).`,
    );
    out();
    out('| what is kept | Postgres µs a task | WAL bytes a task |');
    out('| --- | ---: | ---: |');
    // A difference within the rounds' noise can come out below zero: it is none.
    const us = (c: Cost) => (c.us < 0.5 ? `≈ 0 (${fmt(c.us, 1)})` : fmt(c.us, 1));
    for (const [label, c] of rows)
      out(`| ${label} | ${us(c)} | ${fmt(Math.abs(c.wal) < 0.5 ? 0 : c.wal)} |`);
    out(`| sum | ${fmt(total, 1)} | ${fmt(rows.reduce((sum, [, c]) => sum + c.wal, 0))} |`);
    out();
    out(
      `On disk, a completed task kept for its TTL takes ${fmt(at('full bytes').wal)} bytes with its indexes (${fmt(at('lean bytes').wal)} with its primary key only). The drain's own row gives the whole of Postgres's CPU a task beside the reference's.`,
    );
    out();
  } finally {
    await listener.query('unlisten *').catch(() => {});
    await client.query('drop table if exists keep_lean').catch(() => {});
    client.release();
    listener.release();
  }
}
