import { sql } from 'kysely';
import type { Executor } from '../../db/types.js';
import { claimable } from './leases.js';

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
