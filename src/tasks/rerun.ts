import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import type { Executor, TaskRow } from '../db/types.js';
import { notFound, ServiceError } from '../errors.js';
import { currentTraceParent } from '../tracing/tracer.js';
import { rateLimitOf } from './flow-control.js';
import type { KindRegistry, TaskKind } from './kinds.js';
import type { Actor } from './requests.js';
import { findVisibleTask } from './sql/find.js';
import { insertTask } from './sql/insert.js';
import { checkStepName } from './steps/names.js';
import { type Task, toTask } from './task.js';
import { checkId } from './validation.js';

/**
 * Starts a FAILED or CANCELLED task of the actor again as a new task linked by `retryOf`
 * (same kind, input and labels, a fresh retention); the old one stays as it was.
 * @throws ServiceError TASK_NOT_RETRYABLE for a task still active, or completed
 */
export async function retryTask(
  db: Executor,
  kinds: KindRegistry,
  actor: Actor,
  id: string,
  fromStep: string | null = null,
): Promise<Task> {
  const row = await findVisibleTask(db, checkId(id), actor.id);
  if (!row) throw notFound();
  if (row.status !== 'failed' && row.status !== 'cancelled')
    throw new ServiceError(
      'TASK_NOT_RETRYABLE',
      `The task is ${row.status}; only failed or cancelled tasks can be run again.`,
    );
  const kind = kinds.require(row.kind);
  if (fromStep !== null) {
    checkStepName(fromStep, 'fromStep');
    const known = await db
      .selectFrom('task_steps')
      .select('name')
      .where('task_id', '=', row.id)
      .where('name', '=', fromStep)
      .executeTakeFirst();
    if (!known)
      throw new ServiceError(
        'BAD_USER_INPUT',
        `fromStep ${JSON.stringify(fromStep)} is not in the task's journal.`,
      );
  }
  return db.transaction().execute(async (trx) => {
    const task = await rerun(trx, kind, row);
    if (fromStep !== null) await copyJournal(trx, row.id, task.id, fromStep);
    return task;
  });
}

/**
 * Copies the journal of task `from` to task `to` up to, not including, step `before`, in the
 * order the steps first ran: what ended (COMPLETED, and a child that failed) is copied, a
 * wait still open is not (the new task waits afresh).
 */
async function copyJournal(db: Executor, from: string, to: string, before: string) {
  await sql`
    with copied as (
      insert into task_steps (task_id, name, position, state, attempts, started_at, ended_at,
                              wake_at, child_id, child_status, result, error)
      select ${to}::uuid, s.name, s.position, s.state, s.attempts, s.started_at, s.ended_at,
             s.wake_at, s.child_id, s.child_status, s.result, s.error
      from task_steps s
      where s.task_id = ${from}::uuid and s.state in ('COMPLETED', 'FAILED')
        and s.position < (select position from task_steps where task_id = ${from}::uuid and name = ${before})
        and (s.state = 'COMPLETED' or s.child_status is not null)
      returning 1
    )
    update tasks set journaled = true where id = ${to}::uuid and exists (select 1 from copied)`.execute(
    db,
  );
}

async function rerun(db: Executor, kind: TaskKind, row: TaskRow): Promise<Task> {
  const outcome = await insertTask(db, {
    id: randomUUID(),
    owner: row.owner,
    kind: kind.name,
    input: row.input,
    ttlMs: row.ttl_ms,
    pollIntervalMs: kind.pollIntervalMs,
    timeoutMs: kind.timeoutMs,
    idempotencyKey: null,
    labels: row.labels,
    retryOf: row.id,
    traceParent: currentTraceParent(),
    // A re-run starts at once, managed as the original was (DESIGN §15).
    runAt: null,
    priority: row.priority,
    concurrencyKey: row.concurrency_key,
    concurrencyLimit: row.concurrency_limit,
    rateLimitKey: row.rate_limit_key ?? null,
    rateLimit: rateLimitOf(row),
    retry: {
      maxAttempts: row.max_attempts,
      initialDelayMs: row.retry_initial_delay_ms,
      factor: row.retry_factor,
      maxDelayMs: row.retry_max_delay_ms,
    },
  });
  return toTask(outcome.row);
}
