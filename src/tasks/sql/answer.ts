import { type RawBuilder, sql } from 'kysely';
import type { Executor, TaskRow } from '../../db/types.js';
import { json, notifyChanged, notifyReady, withoutNotifyColumns } from './common.js';

/**
 * The questions row `x` waits for, as a jsonb array (tasks/awaiting.ts `outstandingQuestions`):
 * `input_requests` when its first is `input_request`, else `input_request` alone.
 */
const outstanding = sql`case when x.input_requests -> 0 ->> 'key' = x.input_request ->> 'key'
  then x.input_requests else jsonb_build_array(x.input_request) end`;

/**
 * Stores the answer to the outstanding question `key`, only while the task waits for that key.
 * When it was the last outstanding question the task becomes WORKING: the worker holding it
 * resumes, or if none does, the task is claimable again and its re-run gets the stored answers
 * at once. Otherwise it stays INPUT_REQUIRED with the other questions (a new version).
 *
 * The row is locked first and the questions left are computed from the version locked, so two
 * answers to different questions at once each see the other's.
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
    with q as (
      select x.id, coalesce((
        select jsonb_agg(e.q order by e.n)
        from jsonb_array_elements(${outstanding}) with ordinality as e(q, n)
        where e.q ->> 'key' <> ${key}::text
      ), '[]'::jsonb) as rest
      from tasks x
      where x.id = ${id}::uuid and x.owner = ${owner} and x.expires_at > now()
        and x.status = 'input_required'
        and ${outstanding} @> jsonb_build_array(jsonb_build_object('key', ${key}::text))
      for update
    ), t as (
      update tasks set version = version + 1, last_updated_at = now(),
             answers = answers || jsonb_build_object(${key}::text, ${json(value)}),
             status = case when q.rest = '[]'::jsonb then 'working' else 'input_required' end,
             input_request = q.rest -> 0,
             input_requests = nullif(q.rest, '[]'::jsonb),
             status_message = case when q.rest = '[]'::jsonb then null else tasks.status_message end
      from q
      where tasks.id = q.id and tasks.status = 'input_required'
      returning tasks.*
    )${extra?.ctes ?? sql``}
    select t.*, ${notifyChanged} as notified,
      case when t.status = 'working' then ${notifyReady} end as ready${extra?.column ?? sql``}
    from t`.execute(db);
  return withoutNotifyColumns(result.rows[0]);
}
