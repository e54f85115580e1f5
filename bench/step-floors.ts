import type { Kysely } from 'kysely';
import type pg from 'pg';
import type { Database } from '../src/db/types.js';
import type { Lease } from '../src/tasks/sql/leases.js';
import { commitStep } from '../src/tasks/steps/journal-sql.js';

/**
 * The steps row's floors (bench/steps.ts), each 100 commits timed in a row: a bare INSERT,
 * the journal's own row inserted plainly, and the step's own statement without `ctx.step`.
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

/**
 * 100 commits of the step's own statement (`commitStep`: the lease's fence, the conflict
 * clause, the result returned) through the app's pool, called directly for a task that holds
 * its lease: a step without `ctx.step` around it, nor a running handler's turns between them.
 */
export async function statementCommits(
  db: Kysely<Database>,
  held: { taskId: string; lease: Lease },
  round: number,
): Promise<number> {
  const t0 = performance.now();
  for (let i = 0; i < 100; i++) {
    const step = { name: `r${round}-${i}`, position: round * 100 + i + 1, attempts: 1 };
    const written = await commitStep(
      db,
      held.taskId,
      held.lease,
      { ...step, startedAt: new Date(), result: String(i) },
      false,
    );
    if (!written) throw new Error('the held task lost its lease');
  }
  return performance.now() - t0;
}
