import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { claimTasks } from '../../../src/tasks/sql/claim.js';
import { renewLeases } from '../../../src/tasks/sql/leases.js';
import { backend, useDatabaseOn } from '../../helpers/db.js';

/**
 * A lease renewal never waits for a row another statement holds locked (an outcome of the
 * same worker, which locks many rows in its own order, would deadlock with a renewal that
 * waited): it reports the task `busy`, neither renewed nor lost, and renews it next time.
 * Postgres only: the lock is held on a second connection while the first renews.
 */
describe.skipIf(backend !== 'pg')('a lease renewal', () => {
  const on = useDatabaseOn(2);

  it('skips a task whose row is locked, as busy, and renews it once free', async () => {
    const [{ id }] = (
      await sql<{ id: string }>`
        insert into tasks (id, owner, kind, ttl_ms, expires_at, poll_interval_ms, max_attempts,
                           timeout_ms)
        values (gen_random_uuid(), 'alice', 'renewal', 3600000, now() + interval '1 hour', 1000,
                3, 60000)
        returning id`.execute(on.db)
    ).rows as [{ id: string }];
    const [claimed] = await claimTasks(on.db, 'w1', ['renewal'], 1, 60_000);
    const lease = { id, attempt: claimed!.attempt };

    const whileLocked = await on.db.transaction().execute(async (trx) => {
      await sql`select 1 from tasks where id = ${id}::uuid for update`.execute(trx);
      // On the pool's other connection, while this transaction holds the row.
      return renewLeases(on.db, 'w1', [lease], 60_000);
    });
    expect(whileLocked).toEqual(new Map([[id, 'busy']]));

    expect(await renewLeases(on.db, 'w1', [lease], 60_000)).toEqual(new Map([[id, 'working']]));
    // Another worker's lease, or a stale attempt, is neither renewed nor busy.
    expect(await renewLeases(on.db, 'w2', [lease], 60_000)).toEqual(new Map());
    expect(await renewLeases(on.db, 'w1', [{ id, attempt: lease.attempt + 1 }], 60_000)).toEqual(
      new Map(),
    );
  });
});
