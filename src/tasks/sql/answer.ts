import { type RawBuilder, sql } from 'kysely';
import type { Executor, TaskRow } from '../../db/types.js';
import { json, notifyChanged, notifyReady, withoutNotifyColumns } from './common.js';

/**
 * Stores the answer to the pending input request `key` and sets WORKING, only while the task
 * waits for exactly that key. The worker holding the task resumes; if none does, the task is
 * claimable again and its re-run gets the stored answer at once.
 */
export async function answerTask(
  db: Executor,
  id: string,
  owner: string,
  key: string,
  value: unknown,
  /** More for the same statement: CTEs after `t`, columns after its own (tasks/webhooks/store.ts). */
  extra?: { ctes: RawBuilder<unknown>; column: RawBuilder<unknown> },
): Promise<TaskRow | undefined> {
  const result = await sql<TaskRow>`
    with t as (
      update tasks set status = 'working', version = version + 1, last_updated_at = now(),
             answers = answers || jsonb_build_object(${key}::text, ${json(value)}),
             input_request = null, status_message = null
      where id = ${id}::uuid and owner = ${owner} and expires_at > now()
        and status = 'input_required' and input_request ->> 'key' = ${key}
      returning *
    )${extra?.ctes ?? sql``}
    select t.*, ${notifyChanged} as notified, ${notifyReady} as ready${extra?.column ?? sql``}
    from t`.execute(db);
  return withoutNotifyColumns(result.rows[0]);
}
