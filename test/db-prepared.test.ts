import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { prepared } from '../src/db/pg-pool.js';
import { startTestApp, type TestApp } from './helpers/app.js';
import { backend } from './helpers/db.js';

/** Statements marked `prepared` (src/db/pg-pool.ts): parsed once per connection, then run by name. */
describe.skipIf(backend === 'pglite')('prepared statements on Postgres', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t?.stop());

  it('prepares a marked statement once on its connection and runs it again by name; unmarked ones are not prepared', async () => {
    await t.app.db.kysely.connection().execute(async (db) => {
      for (const n of [1, 2, 3]) {
        const { rows } = await sql<{ n: number }>`${prepared} select ${n}::int + 1 as n`.execute(
          db,
        );
        expect(rows).toEqual([{ n: n + 1 }]);
      }
      await sql`select ${1}::int as unmarked`.execute(db);
      const { rows } = await sql<{ name: string; statement: string }>`
        select name, statement from pg_prepared_statements`.execute(db);
      const marked = rows.filter((r) => r.statement.startsWith('/* prepared */'));
      expect(marked).toHaveLength(1);
      expect(marked[0]!.name).toMatch(/^th_[0-9a-f]{16}$/);
      expect(rows.some((r) => r.statement.includes('unmarked'))).toBe(false);
    });
  });
});
