import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { claimWork } from '../../../src/tasks/sql/claim.js';
import { backend, useDatabaseOn } from '../../helpers/db.js';

/**
 * The claim's plans are made once per connection and kept (migration 0012): those a connection
 * made while `tasks` was nearly empty must still read it through its indexes once it has
 * grown, not scan it whole on every claim until the next ANALYZE (migration 0016). Postgres
 * only: its statistics views count the scans.
 */
describe.skipIf(backend !== 'pg')(
  'a claim on a connection that planned it on an empty table',
  () => {
    // One connection: every claim below runs on the plans the first ones made.
    const on = useDatabaseOn(1);

    const queue = (n: number, status: 'working' | 'completed') =>
      sql`
      insert into tasks (id, owner, kind, ttl_ms, expires_at, poll_interval_ms, max_attempts,
                         timeout_ms, status)
      select gen_random_uuid(), 'alice', 'plans', 3600000, now() + interval '1 hour', 1000, 3,
             60000, ${status}
      from generate_series(1, ${n}::int)`.execute(on.db);

    it('reads the grown table through its indexes', { timeout: 60_000 }, async () => {
      // Planned while the table holds one task: every statement of a claim that leases one.
      await queue(1, 'working');
      expect((await claimWork(on.db, 'w', ['plans'], 8, 60_000)).rows).toHaveLength(1);
      await claimWork(on.db, 'w', ['plans'], 8, 60_000);

      // The table grows, unanalyzed (as between two runs of autovacuum).
      await queue(5_000, 'completed');
      await queue(1, 'working');

      const scans = await on.db.transaction().execute(async (trx) => {
        const claim = await claimWork(trx, 'w', ['plans'], 8, 60_000);
        const { rows } = await sql<{ seq_scan: string; idx_scan: string }>`
        select seq_scan, idx_scan from pg_stat_xact_user_tables
        where relname = 'tasks'`.execute(trx);
        return { claimed: claim.rows.length, ...rows[0]! };
      });
      expect(scans.claimed).toBe(1);
      expect(Number(scans.idx_scan)).toBeGreaterThan(0);
      expect(Number(scans.seq_scan)).toBe(0);
    });
  },
);
