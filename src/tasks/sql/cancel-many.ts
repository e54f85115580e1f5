import { sql } from 'kysely';
import type { Executor } from '../../db/types.js';
import type { ListPosition } from '../cursor.js';
import type { CheckedFilter } from '../filter.js';
import type { TaskStatus } from '../status.js';
import { notifyChanged } from './common.js';
import { conditions, listTasks } from './list.js';

const ACTIVE: readonly TaskStatus[] = ['working', 'input_required'];

/** How many of `owner`'s unexpired tasks meet the filter, terminal ones included. */
export async function countMatching(
  db: Executor,
  owner: string,
  filter: CheckedFilter,
): Promise<number> {
  const result = await sql<{ n: number }>`
    select count(*)::int as n from tasks t where ${conditions({ owner, first: 0 }, filter)}`.execute(
    db,
  );
  return result.rows[0]?.n ?? 0;
}

/**
 * Cancels the next `size` active tasks of `owner` that meet the filter, newest first after
 * `after`: a read that locks nothing, then one conditional UPDATE of those rows alone, so no
 * statement holds more than `size` row locks. Each cancelled task is announced as `cancelTask`
 * announces it (its runner aborts the handler, wherever it runs).
 * @returns the tasks cancelled, and where the next batch starts (null: none is left)
 */
export async function cancelBatch(
  db: Executor,
  owner: string,
  filter: CheckedFilter,
  after: ListPosition | null,
  size: number,
): Promise<{
  cancelled: Array<{ id: string; version: number; children_count: number }>;
  next: ListPosition | null;
}> {
  const statuses = filter.statuses
    ? filter.statuses.filter((s) => ACTIVE.includes(s))
    : [...ACTIVE];
  if (statuses.length === 0) return { cancelled: [], next: null };
  const { rows, hasNextPage } = await listTasks(db, {
    owner,
    filter: { ...filter, statuses },
    first: size,
    after,
  });
  if (rows.length === 0) return { cancelled: [], next: null };
  const result = await sql<{ id: string; version: number; children_count: number }>`
    with t as (
      update tasks set status = 'cancelled', version = version + 1, last_updated_at = now(),
             input_request = null, input_requests = null, status_message = null
      where id = any(${rows.map((r) => r.id)}::uuid[]) and owner = ${owner}
        and expires_at > now() and status in ('working', 'input_required')
      returning id, version, children_count
    )
    select t.id, t.version, t.children_count, ${notifyChanged} as notified from t`.execute(db);
  const last = rows.at(-1);
  return {
    cancelled: result.rows.map(({ id, version, children_count }) => ({
      id,
      version,
      children_count,
    })),
    next: hasNextPage && last ? { createdAt: last.created_at, id: last.id } : null,
  };
}
