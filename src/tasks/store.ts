import { sql, type Kysely } from 'kysely';
import type { Database, TaskRow } from '../db/types.js';
import type { TaskStatus } from './status.js';
import { changedRow, json, notifyChanged, notifyReady } from './sql.js';

/**
 * The queries behind the faces. Each takes the executor first so a caller can own the
 * transaction. `owner` narrows a query to one principal's tasks; `null` means an admin
 * acting on anyone's. Nothing here returns an expired task.
 */
type Db = Kysely<Database>;

export interface NewTask {
  id: string;
  owner: string;
  kind: string;
  input: unknown;
  ttlMs: number;
  pollIntervalMs: number;
  maxAttempts: number;
  timeoutMs: number;
  idempotencyKey: string | null;
}

export type InsertOutcome =
  | { created: true; row: TaskRow }
  | { created: false; row: TaskRow; sameRequest: boolean };

/**
 * Stores a new task and wakes the workers, in one statement. With an idempotency key already
 * used by this owner, creates nothing and returns the existing task, saying whether it was
 * started with the same kind and input (jsonb equality ignores key order and spacing).
 * A key whose task has expired is free again.
 */
export async function insertTask(db: Db, task: NewTask): Promise<InsertOutcome> {
  for (;;) {
    const inserted = await sql<TaskRow>`
      with t as (
        insert into tasks (id, owner, kind, input, ttl_ms, created_at, last_updated_at, expires_at,
                           poll_interval_ms, idempotency_key, max_attempts, timeout_ms)
        select ${task.id}::uuid, ${task.owner}, ${task.kind}, ${json(task.input)}, ${task.ttlMs}::int,
                c.at, c.at, c.at + ${task.ttlMs}::int * interval '1 millisecond', ${task.pollIntervalMs}::int,
                ${task.idempotencyKey}, ${task.maxAttempts}::int, ${task.timeoutMs}::int
        -- millisecond precision: cursors and expiresAt round-trip through JS Dates exactly
        from (select date_trunc('milliseconds', now()) as at) c
        on conflict (owner, idempotency_key) do nothing
        returning *
      )
      select t.*, ${notifyReady} as notified from t`.execute(db);
    const row = inserted.rows[0];
    if (row) return { created: true, row: changedRow(row)! };

    const existing = await sql<TaskRow & { same: boolean; expired: boolean }>`
      select t.*, (t.kind = ${task.kind} and t.input is not distinct from ${json(task.input)}) as same,
             t.expires_at <= now() as expired
      from tasks t where t.owner = ${task.owner} and t.idempotency_key = ${task.idempotencyKey}`.execute(db);
    const found = existing.rows[0];
    if (found && !found.expired) {
      const { same, expired: _expired, ...rest } = found;
      return { created: false, row: rest, sameRequest: same };
    }
    if (found) {
      // The key's task is past its retention: it is gone, so the key is free. Drop the row early.
      await db.deleteFrom('tasks').where('id', '=', found.id).where('expires_at', '<=', sql<Date>`now()`).execute();
    }
  }
}

export async function findTask(db: Db, id: string, owner: string | null): Promise<TaskRow | undefined> {
  let query = db.selectFrom('tasks').selectAll().where('id', '=', id).where('expires_at', '>', sql<Date>`now()`);
  if (owner !== null) query = query.where('owner', '=', owner);
  return query.executeTakeFirst();
}

export interface ListOptions {
  owner: string | null;
  statuses?: readonly TaskStatus[] | null;
  /** Rows to return; one more is read to tell whether another page exists. */
  first: number;
  after?: { createdAt: Date; id: string } | null;
}

/** Newest first, keyset-paginated on (created_at, id) so pages never overlap. */
export async function listTasks(db: Db, options: ListOptions): Promise<{ rows: TaskRow[]; hasNextPage: boolean }> {
  let query = db
    .selectFrom('tasks')
    .selectAll()
    .where('expires_at', '>', sql<Date>`now()`)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(options.first + 1);
  if (options.owner !== null) query = query.where('owner', '=', options.owner);
  if (options.statuses?.length) query = query.where('status', 'in', [...options.statuses]);
  if (options.after) {
    const { createdAt, id } = options.after;
    query = query.where(sql<boolean>`(created_at, id) < (${createdAt.toISOString()}::timestamptz, ${id}::uuid)`);
  }
  const rows = await query.execute();
  return { rows: rows.slice(0, options.first), hasNextPage: rows.length > options.first };
}

/** Sets CANCELLED when the task is still active. `undefined`: not changed (unknown, gone or already final). */
export async function cancelTask(db: Db, id: string, owner: string | null): Promise<TaskRow | undefined> {
  const result = await sql<TaskRow>`
    with t as (
      update tasks set status = 'cancelled', version = version + 1, last_updated_at = now(),
             input_request = null, status_message = null
      where id = ${id}::uuid and (${owner}::text is null or owner = ${owner}::text)
        and expires_at > now() and status in ('working', 'input_required')
      returning *
    )
    select t.*, ${notifyChanged} as notified from t`.execute(db);
  return changedRow(result.rows[0]);
}

/**
 * Stores the answer to the pending input request `key` and sets WORKING, only while the task
 * waits for exactly that key. The worker holding the task resumes; if none does, the task is
 * claimable again and its re-run gets the stored answer at once.
 */
export async function answerTask(db: Db, id: string, owner: string, key: string, value: unknown): Promise<TaskRow | undefined> {
  const result = await sql<TaskRow>`
    with t as (
      update tasks set status = 'working', version = version + 1, last_updated_at = now(),
             answers = answers || jsonb_build_object(${key}::text, ${json(value)}),
             input_request = null, status_message = null
      where id = ${id}::uuid and owner = ${owner} and expires_at > now()
        and status = 'input_required' and input_request ->> 'key' = ${key}
      returning *
    )
    select t.*, ${notifyChanged} as notified, ${notifyReady} as ready from t`.execute(db);
  return changedRow(result.rows[0]);
}

/** The row as stored, expired or not, whoever owns it: for the event hub's re-reads. */
export async function findTaskRow(db: Db, id: string): Promise<TaskRow | undefined> {
  return db.selectFrom('tasks').selectAll().where('id', '=', id).executeTakeFirst();
}
