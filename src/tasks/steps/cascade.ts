import { sql } from 'kysely';
import type { Executor } from '../../db/types.js';
import type { TaskEvents } from '../events/hub.js';
import { notifyChanged } from '../sql/common.js';

/** Rows one statement of a cascade may lock at most (as a bulk cancel's batches). */
export const CASCADE_BATCH_SIZE = 250;

/**
 * Cancels every non-terminal descendant of the tasks `roots` (DESIGN §16: cancelling a task
 * cancels its children, theirs, and so on), in batches that never lock more than
 * CASCADE_BATCH_SIZE rows, each change announced as `cancelTask` announces it (the handler
 * running it, wherever, is aborted; one suspended holds nothing to abort). A child that ended
 * may have children of its own still running: the walk goes through every task that started
 * any (`children_count`), not only through those it cancels.
 * @returns how many it cancelled
 */
export async function cancelDescendants(
  db: Executor,
  events: TaskEvents,
  roots: readonly string[],
): Promise<number> {
  let cancelled = 0;
  const parents = [...roots];
  for (let parent = parents.pop(); parent !== undefined; parent = parents.pop()) {
    let after: { createdAt: Date; id: string } | null = null;
    for (;;) {
      const page: Array<{ id: string; created_at: Date; children_count: number }> = (
        await sql<{ id: string; created_at: Date; children_count: number }>`
          select id, created_at, children_count from tasks
          where parent_id = ${parent}::uuid
            ${after ? sql`and (created_at, id) < (${after.createdAt.toISOString()}::timestamptz, ${after.id}::uuid)` : sql``}
          order by created_at desc, id desc
          limit ${CASCADE_BATCH_SIZE}::int`.execute(db)
      ).rows;
      if (page.length === 0) break;
      const changed = await sql<{ id: string; version: number }>`
        with t as (
          update tasks set status = 'cancelled', version = version + 1, last_updated_at = now(),
                 input_request = null, input_requests = null, status_message = null
          where id = any(${page.map((r) => r.id)}::uuid[]) and expires_at > now()
            and status in ('working', 'input_required')
          returning id, version
        )
        select t.id, t.version, ${notifyChanged} as notified from t`.execute(db);
      for (const { id, version } of changed.rows) events.committed(id, version);
      cancelled += changed.rows.length;
      for (const row of page) if (row.children_count > 0) parents.push(row.id);
      if (page.length < CASCADE_BATCH_SIZE) break;
      const last = page.at(-1)!;
      after = { createdAt: last.created_at, id: last.id };
    }
  }
  return cancelled;
}
