import { sql } from 'kysely';
import type { Executor } from '../../db/types.js';
import { claimable } from './claim.js';

/** What the metrics read from the database when scraped (DESIGN §13). */

/** Unexpired tasks counted by kind and status. */
export async function tasksByKindAndStatus(
  db: Executor,
): Promise<Array<{ kind: string; status: string; n: number }>> {
  const result = await sql<{ kind: string; status: string; n: number }>`
    select kind, status, count(*)::int as n from tasks where expires_at > now()
    group by kind, status`.execute(db);
  return result.rows;
}

/** The tasks waiting for a worker (claimable now), and the age of the oldest in seconds. */
export async function queueNow(
  db: Executor,
): Promise<{ depth: number; oldestSeconds: number | null }> {
  const result = await sql<{ depth: number; oldest: number | null }>`
    select count(*)::int as depth,
      extract(epoch from now() - min(last_updated_at))::float8 as oldest
    from tasks
    where ${claimable}`.execute(db);
  const row = result.rows[0];
  return { depth: row?.depth ?? 0, oldestSeconds: row?.oldest ?? null };
}

/** Held tasks by reason (DESIGN §14, §17), as the metrics name them. */
export interface HeldNow {
  concurrency: number;
  rate_limit: number;
  time: number;
}

/**
 * The tasks that could run but wait to be claimed, by why: their concurrency key at its
 * limit, their rate limit key's window full, or their time (a delayed start, a backoff or a
 * timed wait) not come. Each count walks its own partial index (tasks_held, tasks_rate_held,
 * tasks_scheduled) and nothing else.
 */
export async function heldNow(db: Executor): Promise<HeldNow> {
  const result = await sql<HeldNow>`
    select
      (select count(*)::int from tasks where status = 'working' and hold = 'key') as concurrency,
      (select count(*)::int from tasks where status = 'working' and hold = 'rate') as rate_limit,
      (select count(*)::int from tasks
       where status = 'working' and hold = 'time' and run_at > now()) as time`.execute(db);
  return result.rows[0] ?? { concurrency: 0, rate_limit: 0, time: 0 };
}
