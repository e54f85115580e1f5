import type { Kysely } from 'kysely';
import type pg from 'pg';
import type { Database } from '../src/db/types.js';
import type { Lease } from '../src/tasks/sql/leases.js';
import { commitStep, commitStepQuery, type StepCommit } from '../src/tasks/steps/journal-sql.js';

/**
 * The steps row's floors (bench/steps.ts), each 100 commits timed in a row: a bare INSERT,
 * the journal's own row inserted plainly, and the step's own statement without `ctx.step`
 * (on a raw connection, and through the app's pool); and the counters that say how many
 * commits a step makes.
 */

/** 100 sequential INSERT commits of a bare row on the same database: ms for all of them. */
export async function bareCommits(client: pg.Client): Promise<number> {
  const t0 = performance.now();
  for (let i = 0; i < 100; i++) await client.query('insert into bench_floor (v) values ($1)', [i]);
  return performance.now() - t0;
}

/**
 * 100 INSERT commits of the journal's own rows, plainly (no lease to check, no conflict to
 * handle, nothing returned), into a table shaped as task_steps: what a step's row costs to
 * commit, apart from what a step does besides.
 */
export async function rowCommits(client: pg.Client): Promise<number> {
  const { rows } = await client.query<{ id: string }>('select gen_random_uuid() as id');
  const t0 = performance.now();
  for (let i = 0; i < 100; i++)
    await client.query(
      `insert into bench_step_rows (task_id, name, position, state, attempts, started_at, ended_at, result)
       values ($1, $2, $3, 'COMPLETED', 1, $4, now(), $5)`,
      [rows[0]!.id, `s${i}`, i + 1, new Date(), String(i)],
    );
  return performance.now() - t0;
}

/** 100 step commits in a row, each by `commit` (false: nothing written): ms for all of them. */
async function stepCommits(
  prefix: string,
  round: number,
  commit: (step: StepCommit) => Promise<boolean>,
): Promise<number> {
  const t0 = performance.now();
  for (let i = 0; i < 100; i++) {
    const written = await commit({
      name: `${prefix}${round}-${i}`,
      position: round * 100 + i + 1,
      attempts: 1,
      startedAt: new Date(),
      result: String(i),
    });
    if (!written) throw new Error('the held task lost its lease');
  }
  return performance.now() - t0;
}

/**
 * 100 commits of the step's own statement as `commitStep` sends it (the lease's fence, the
 * conflict clause, the result returned), on the same raw connection as the bare INSERT: what
 * Postgres takes for it, without the app's kysely, pool and breaker around it.
 */
export function rawStatementCommits(
  client: pg.Client,
  db: Kysely<Database>,
  held: { taskId: string; lease: Lease },
  round: number,
): Promise<number> {
  return stepCommits('raw', round, async (step) => {
    const query = commitStepQuery(db, held.taskId, held.lease, step, false);
    const { rowCount } = await client.query({
      name: 'bench-step-commit',
      text: query.sql,
      values: [...query.parameters],
    });
    return rowCount === 1;
  });
}

/**
 * 100 commits of the step's own statement (`commitStep`: the lease's fence, the conflict
 * clause, the result returned) through the app's pool, called directly for a task that holds
 * its lease: a step without `ctx.step` around it, nor a running handler's turns between them.
 */
export function statementCommits(
  db: Kysely<Database>,
  held: { taskId: string; lease: Lease },
  round: number,
): Promise<number> {
  return stepCommits(
    'r',
    round,
    async (step) => (await commitStep(db, held.taskId, held.lease, step, false)) !== undefined,
  );
}

/**
 * The transactions that wrote while `run` ran: xids assigned across the server, less the one
 * reading the counter takes. Every write a step makes is one transaction, so this counts
 * commits, durable or not.
 */
export async function writesDuring(
  client: pg.Client,
  run: () => Promise<unknown>,
): Promise<number> {
  const xid = async () =>
    Number((await client.query<{ x: string }>('select txid_current() as x')).rows[0]!.x);
  const before = await xid();
  await run();
  return (await xid()) - before - 1;
}

/**
 * The WAL flushes while `run` ran (pg_stat_wal, the whole server's): the durable commits. A
 * backend reports its counts at most once a second, and an idle one within 10 s, so each
 * reading waits 11 s first.
 */
export async function flushesDuring(
  client: pg.Client,
  run: () => Promise<unknown>,
): Promise<number> {
  const flushes = async () => {
    await new Promise((r) => setTimeout(r, 11_000));
    return Number(
      (await client.query<{ n: string }>('select wal_sync as n from pg_stat_wal')).rows[0]!.n,
    );
  };
  const before = await flushes();
  await run();
  return (await flushes()) - before;
}
