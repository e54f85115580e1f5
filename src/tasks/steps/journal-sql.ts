import { CompiledQuery, type RawBuilder, sql } from 'kysely';
import { prepared } from '../../db/pg-pool.js';
import type { Executor, StepRow } from '../../db/types.js';
import type { Lease } from '../sql/leases.js';

/**
 * The journal's statements on the runner's side (DESIGN §16), executor first. Every write is
 * fenced by the run's lease, as the task's own writes are: a worker that lost the task writes
 * nothing into its journal.
 */

/** A task's journal and its kept signals, read once when a run of a journalled task starts. */
export interface Journal {
  steps: Map<string, StepRow>;
  signals: Map<string, unknown>;
}

export async function loadJournal(db: Executor, taskId: string): Promise<Journal> {
  const [steps, signals] = await Promise.all([
    db.selectFrom('task_steps').selectAll().where('task_id', '=', taskId).execute(),
    db
      .selectFrom('task_signals')
      .select(['name', 'payload'])
      .where('task_id', '=', taskId)
      .execute(),
  ]);
  return {
    steps: new Map(steps.map((row) => [row.name, row])),
    signals: new Map(signals.map((row) => [row.name, row.payload])),
  };
}

/** What a step's commit writes. */
export interface StepCommit {
  name: string;
  position: number;
  attempts: number;
  startedAt: Date;
  /** JSON text (see `jsonText`). */
  result: string | null;
}

/**
 * The task row of the run, as its lease still holds it; on the task's first journal write,
 * marked `journaled` too (see migration 0008). Not locked: a lock on the row would cost every
 * step a tuple lock and its WAL record, and what it would guard is harmless either way (a
 * step journalled by a run that lost its lease that very moment is a step run at least once,
 * as the journal allows; one committed in the instant its task expires, while the purge deletes
 * it, may outlive the task: a row nothing reads). Its three values may be parameters, or
 * placeholders (`$n`) of a statement compiled once.
 */
function heldTask(taskId: unknown, workerId: unknown, attempt: unknown, first: boolean) {
  const held = sql`id = ${taskId}::uuid and worker_id = ${workerId}
    and attempt = ${attempt}::int and status = 'working' and expires_at > now()`;
  return first
    ? sql`update tasks set journaled = true where ${held} returning id`
    : sql`select id from tasks where ${held}`;
}

/** `heldTask` for the run's own lease. */
function leaseHeld(taskId: string, lease: Lease, first: boolean) {
  return heldTask(taskId, lease.workerId, lease.attempt, first);
}

/** Placeholder `$n` of a statement whose text is compiled once. */
const $ = (n: number): RawBuilder<unknown> => sql.raw(`$${n}`);

/**
 * The step's commit as text with placeholders, one text for each value of `first`, compiled
 * once per process rather than for every step: kysely builds and compiles a template anew on
 * each call, which was a tenth of a step's time where a WAL flush is fast.
 */
const commitTexts = new Map<boolean, string>();
function commitText(db: Executor, first: boolean): string {
  let text = commitTexts.get(first);
  if (text === undefined) {
    text = sql`${prepared}
      with t as (${heldTask($(1), $(2), $(3), first)})
      insert into task_steps (task_id, name, position, state, attempts, started_at, ended_at, result)
      select t.id, ${$(4)}, ${$(5)}::int, 'COMPLETED', ${$(6)}::int, ${$(7)}::timestamptz, now(),
             ${$(8)}::jsonb
      from t
      on conflict (task_id, name) do update set
        state = 'COMPLETED', attempts = excluded.attempts, started_at = excluded.started_at,
        ended_at = excluded.ended_at, result = excluded.result, error = null
      where task_steps.state <> 'COMPLETED'
      returning result`.compile(db).sql;
    commitTexts.set(first, text);
  }
  return text;
}

/** `commitStep`'s statement with its values, as it is sent. */
export function commitStepQuery(
  db: Executor,
  taskId: string,
  lease: Lease,
  step: StepCommit,
  first: boolean,
): CompiledQuery<{ result: unknown }> {
  return CompiledQuery.raw(commitText(db, first), [
    taskId,
    lease.workerId,
    lease.attempt,
    step.name,
    step.position,
    step.attempts,
    step.startedAt,
    step.result,
  ]);
}

/**
 * Commits a finished step, fenced by the lease: one statement, one durable commit, prepared
 * once per connection. A step another run journalled first stays as it was. Only the result
 * comes back (no row's timestamps to parse), as Postgres keeps it: jsonb orders an object's
 * keys its own way, and the run that journals a step must see the value later runs will.
 * @returns the journalled result; `undefined` when the lease no longer holds and nothing was
 *   journalled under the name
 */
export async function commitStep(
  db: Executor,
  taskId: string,
  lease: Lease,
  step: StepCommit,
  first: boolean,
): Promise<{ result: unknown } | undefined> {
  const result = await db.executeQuery(commitStepQuery(db, taskId, lease, step, first));
  if (result.rows[0]) return result.rows[0];
  // Nothing written: journalled before (by a run that lost its lease to this one, say), or
  // this run's lease is gone.
  return db
    .selectFrom('task_steps')
    .select('result')
    .where('task_id', '=', taskId)
    .where('name', '=', step.name)
    .where('state', '=', 'COMPLETED')
    .executeTakeFirst();
}

/**
 * Shows a step whose `fn` is still running as `RUNNING`, fenced by the lease and committed
 * without waiting for its flush: it is a view for people, which the step's commit or failure
 * overwrites, and which a crash may lose. It never overwrites a journalled step, and a step's
 * commit that got there first stays.
 */
export async function markStepRunning(
  db: Executor,
  taskId: string,
  lease: Lease,
  step: Omit<StepCommit, 'result'>,
  first: boolean,
): Promise<void> {
  await sql`
    with t as (${leaseHeld(taskId, lease, first)}),
    async_commit as (select set_config('synchronous_commit', 'off', true))
    insert into task_steps (task_id, name, position, state, attempts, started_at)
    select t.id, ${step.name}, ${step.position}::int, 'RUNNING', ${step.attempts}::int,
           ${step.startedAt}::timestamptz
    from t, async_commit
    on conflict (task_id, name) do update set
      state = 'RUNNING', attempts = excluded.attempts, started_at = excluded.started_at,
      ended_at = null, error = null
    where task_steps.state = 'FAILED'`.execute(db);
}

/**
 * Records a step whose `fn` threw (its error, its attempts), fenced by the lease; its commit
 * need not be flushed: the attempt's failure that follows is.
 */
export async function recordStepFailure(
  db: Executor,
  taskId: string,
  lease: Lease,
  step: Omit<StepCommit, 'result'> & { error: { code: string; message: string } },
  first: boolean,
): Promise<void> {
  await sql`
    with t as (${leaseHeld(taskId, lease, first)}),
    async_commit as (select set_config('synchronous_commit', 'off', true))
    insert into task_steps (task_id, name, position, state, attempts, started_at, ended_at, error)
    select t.id, ${step.name}, ${step.position}::int, 'FAILED', ${step.attempts}::int,
           ${step.startedAt}::timestamptz, now(), ${JSON.stringify(step.error)}::jsonb
    from t, async_commit
    on conflict (task_id, name) do update set
      state = 'FAILED', attempts = excluded.attempts, started_at = excluded.started_at,
      ended_at = excluded.ended_at, error = excluded.error
    where task_steps.state <> 'COMPLETED'`.execute(db);
}

/** A wait found satisfied, as {@link completeWaits} writes it. */
export interface SatisfiedWait {
  name: string;
  position: number;
  /** JSON text: the signal's payload, or null. */
  result: string | null;
}

/**
 * Marks waits found satisfied (a sleep whose time passed, a signal kept, a timeout), first
 * reached or found on a later run: COMPLETED with `result`. Not flushed: what satisfied them
 * is durable already (the time, the signal row), so a lost write only leaves the wait to be
 * found satisfied again.
 */
export async function completeWaits(
  db: Executor,
  taskId: string,
  lease: Lease,
  waits: readonly SatisfiedWait[],
  first: boolean,
): Promise<void> {
  if (waits.length === 0) return;
  await sql`
    with t as (${leaseHeld(taskId, lease, first)}),
    async_commit as (select set_config('synchronous_commit', 'off', true))
    insert into task_steps (task_id, name, position, state, attempts, ended_at, result)
    select t.id, w.name, w.position, 'COMPLETED', 1, now(), w.result
    from t, async_commit,
      unnest(${waits.map((w) => w.name)}::text[], ${waits.map((w) => w.position)}::int[],
             ${waits.map((w) => w.result)}::jsonb[]) as w(name, position, result)
    on conflict (task_id, name) do update set
      state = 'COMPLETED', attempts = greatest(task_steps.attempts, 1),
      ended_at = excluded.ended_at, result = excluded.result
    where task_steps.state <> 'COMPLETED'`.execute(db);
}
