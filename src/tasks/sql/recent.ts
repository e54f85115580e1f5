import { type Kysely, sql } from 'kysely';
import type { Database, TaskRow } from '../../db/types.js';
import type { TaskStatus } from '../status.js';

export interface RecentOptions {
  owner: string;
  /** null: any status; empty: none (a filter no task can match). */
  statuses: readonly TaskStatus[] | null;
  /** Only the task with this id (A2A's contextId filter: a task's context is the task). */
  id: string | null;
  /** Only tasks last updated at or after this instant. */
  updatedSince: Date | null;
  /** Rows to return; one more is read to tell whether another page exists. */
  first: number;
  /** Where the previous page ended. */
  after: { lastUpdatedAt: Date; id: string } | null;
}

/**
 * An owner's live tasks, most recently updated first, keyset-paginated on
 * (last_updated_at to the millisecond, id), with the number of tasks matching the filters
 * over all pages. Updates write microseconds, positions travel as milliseconds: ordering on
 * the truncated instant keeps a page boundary from skipping rows of the same millisecond.
 */
export async function listRecentTasks(
  db: Kysely<Database>,
  options: RecentOptions,
): Promise<{ rows: TaskRow[]; hasNextPage: boolean; totalSize: number }> {
  if (options.statuses?.length === 0) return { rows: [], hasNextPage: false, totalSize: 0 };
  const updated = sql<Date>`date_trunc('milliseconds', last_updated_at)`;
  const filtered = () => {
    let query = db
      .selectFrom('tasks')
      .where('owner', '=', options.owner)
      .where('expires_at', '>', sql<Date>`now()`);
    if (options.statuses) query = query.where('status', 'in', [...options.statuses]);
    if (options.id !== null) query = query.where('id', '=', options.id);
    if (options.updatedSince !== null)
      query = query.where('last_updated_at', '>=', options.updatedSince);
    return query;
  };
  let page = filtered()
    .selectAll()
    .orderBy(updated, 'desc')
    .orderBy('id', 'desc')
    .limit(options.first + 1);
  if (options.after) {
    const { lastUpdatedAt, id } = options.after;
    page = page.where(
      sql<boolean>`(${updated}, id) < (${lastUpdatedAt.toISOString()}::timestamptz, ${id}::uuid)`,
    );
  }
  const rows = await page.execute();
  const count = await filtered()
    .select((eb) => eb.fn.countAll<string>().as('total'))
    .executeTakeFirstOrThrow();
  return {
    rows: rows.slice(0, options.first),
    hasNextPage: rows.length > options.first,
    totalSize: Number(count.total),
  };
}
