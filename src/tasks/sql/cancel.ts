import { sql } from 'kysely';
import type { Executor, TaskRow } from '../../db/types.js';
import { notifyChanged, withoutNotifyColumns } from './common.js';

/** Sets CANCELLED when the task is still active. `undefined`: not changed (unknown, gone or already final). */
export async function cancelTask(
  db: Executor,
  id: string,
  owner: string | null,
): Promise<TaskRow | undefined> {
  const result = await sql<TaskRow>`
    with t as (
      update tasks set status = 'cancelled', version = version + 1, last_updated_at = now(),
             input_request = null, input_requests = null, status_message = null
      where id = ${id}::uuid and (${owner}::text is null or owner = ${owner}::text)
        and expires_at > now() and status in ('working', 'input_required')
      returning *
    )
    select t.*, ${notifyChanged} as notified from t`.execute(db);
  return withoutNotifyColumns(result.rows[0]);
}
