import { sql } from 'kysely';
import type { Executor, TaskRow } from '../../db/types.js';
import type { TaskStatus } from '../status.js';

export interface ListOptions {
  owner: string | null;
  statuses?: readonly TaskStatus[] | null;
  /** Rows to return; one more is read to tell whether another page exists. */
  first: number;
  after?: { createdAt: Date; id: string } | null;
}

/** Newest first, keyset-paginated on (created_at, id) so pages never overlap. */
export async function listTasks(
  db: Executor,
  options: ListOptions,
): Promise<{ rows: TaskRow[]; hasNextPage: boolean }> {
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
    query = query.where(
      sql<boolean>`(created_at, id) < (${createdAt.toISOString()}::timestamptz, ${id}::uuid)`,
    );
  }
  const rows = await query.execute();
  return { rows: rows.slice(0, options.first), hasNextPage: rows.length > options.first };
}
