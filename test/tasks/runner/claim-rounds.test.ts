import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { claimWork } from '../../../src/tasks/sql/claim.js';
import { backend, useDatabaseOn } from '../../helpers/db.js';

/**
 * A fair claim looks again for more only where there may be more (migration 0019): one that
 * walked every owner with claimable work and took all each had stops after its first round,
 * however much room it has left, as most claims (a worker woken for one task) do. Postgres
 * only: its statistics views count the rows a transaction read. The claims themselves, rounds
 * included, are test/tasks/flow-fairness.test.ts's.
 */
describe.skipIf(backend !== 'pg')('the rounds of a fair claim', () => {
  const on = useDatabaseOn(1);

  /** Queues `n` ready tasks of `owner`. */
  const queue = (owner: string, n: number) =>
    sql`
      insert into tasks (id, owner, kind, ttl_ms, expires_at, poll_interval_ms, max_attempts,
                         timeout_ms)
      select gen_random_uuid(), ${owner}, 'rounds', 3600000, now() + interval '1 hour', 1000, 3,
             60000
      from generate_series(1, ${n}::int)`.execute(on.db);

  /** A fair claim with room for `limit`, rolled back: what it claimed and the rows it read. */
  async function claim(limit: number): Promise<{ owners: string[]; read: number }> {
    const fetched = sql<{ n: string }>`
      select idx_tup_fetch + seq_tup_read as n from pg_stat_xact_user_tables
      where relname = 'tasks'`;
    let seen: { owners: string[]; read: number } | undefined;
    await on.db
      .transaction()
      .execute(async (trx) => {
        const before = Number((await fetched.execute(trx)).rows[0]!.n);
        const { rows } = await claimWork(trx, 'w', ['rounds'], limit, 60_000);
        const after = Number((await fetched.execute(trx)).rows[0]!.n);
        seen = { owners: rows.map((r) => r.owner), read: after - before };
        throw new Error('rollback');
      })
      .catch((err: Error) => {
        if (err.message !== 'rollback') throw err;
      });
    return seen!;
  }

  it('stops after one round once it has seen every owner and all each had', async () => {
    await queue('solo', 1);
    const exact = await claim(1);
    const roomy = await claim(8);
    expect(exact.owners).toEqual(['solo']);
    expect(roomy.owners).toEqual(['solo']);
    // A second round would read the claimed task again, walking its owner's entries.
    expect(roomy.read).toBe(exact.read);
  });

  it('looks again where an owner gave its whole share', async () => {
    await queue('many', 10);
    // Shares of four each: solo gives its one, many its four, and the next round the rest.
    expect((await claim(8)).owners.sort()).toEqual([...Array(7).fill('many'), 'solo']);
  });
});
