import { sql } from 'kysely';
import { prepared } from '../../db/pg-pool.js';
import type { Executor, TaskRow } from '../../db/types.js';

/** The task as its owner (or, with `owner` null, an admin) sees it: `undefined` once expired. */
export async function findVisibleTask(
  db: Executor,
  id: string,
  owner: string | null,
): Promise<TaskRow | undefined> {
  let query = db
    .selectFrom('tasks')
    .selectAll()
    .where('id', '=', id)
    .where('expires_at', '>', sql<Date>`now()`);
  if (owner !== null) query = query.where('owner', '=', owner);
  return query.executeTakeFirst();
}

/**
 * The row as stored, expired or not, whoever owns it: for the event hub's re-reads, one for
 * every change another process makes to a task watched here. Each connection prepares it once:
 * parsing and planning it cost Postgres about as much as running it.
 */
export async function findStoredTask(db: Executor, id: string): Promise<TaskRow | undefined> {
  const { rows } = await sql<TaskRow>`${prepared} select * from tasks where id = ${id}`.execute(db);
  return rows[0];
}
