import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { prepared } from '../../src/db/pg-pool.js';
import { eventually, startTestApp, type TestApp } from '../helpers/app.js';
import { backend } from '../helpers/db.js';
import { GET_TASK, START_TASK } from '../helpers/operations.js';

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

  it('keeps starting, running and reading tasks when a migration adds a column to tasks under its prepared statements', async () => {
    // Two processes on one database, as in a rolling deploy: tasks start on `a`, and `b` reads
    // them (its reads of rows `a` changed are prepared too).
    const a = await startTestApp();
    const b = await startTestApp({ database: a.database });
    try {
      const token = await a.token('alice');
      const runToCompletion = async () => {
        const started = await a.gql(
          START_TASK,
          { input: { kind: 'sleep', input: { ms: 0 } } },
          token,
        );
        expect(started.errors).toBeUndefined();
        const id = started.data.startTask.id as string;
        await eventually(async () => {
          const read = await b.gql(GET_TASK, { id }, token);
          expect(read.errors).toBeUndefined();
          return read.data.task?.status === 'COMPLETED' ? true : undefined;
        });
      };
      // Every hot statement prepared on the connections both pools use.
      for (let i = 0; i < 3; i++) await runToCompletion();
      await Promise.all(Array.from({ length: 12 }, runToCompletion));

      // What a newer release's migration might do while these processes still run.
      const admin = new pg.Client({ connectionString: a.database.url });
      await admin.connect();
      try {
        await admin.query('alter table tasks add column added_by_a_later_release text');
      } finally {
        await admin.end();
      }

      // Nothing is refused: the outdated statements are parsed afresh.
      for (let i = 0; i < 3; i++) await runToCompletion();
      await Promise.all(Array.from({ length: 12 }, runToCompletion));
    } finally {
      await b.stop();
      await a.stop();
    }
  });
});
