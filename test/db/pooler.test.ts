import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import { prepared } from '../../src/db/pg-pool.js';
import { refusalOf, startTestApp, type TestApp } from '../helpers/app.js';
import { backend, freshDatabase, type TestDatabase } from '../helpers/db.js';

/**
 * Behind a transaction-mode pooler (docs/operating.md, "Behind PgBouncer"): LISTEN on a
 * direct connection of its own, and no statement the next transaction could miss by name.
 * The multi-process suites run through a real PgBouncer in CI (.ci/pgbouncer test).
 */

const PG = 'postgres://app@db.example/tasks';

describe('DATABASE_LISTEN_URL and DB_PREPARED_STATEMENTS', () => {
  it('default to the pool’s own connection and to prepared statements', () => {
    const config = loadConfig({ DATABASE_URL: PG });
    expect(config.databaseListenUrl).toBeUndefined();
    expect(config.db.preparedStatements).toBe(true);
  });

  it('read a direct URL and false', () => {
    const config = loadConfig({
      DATABASE_URL: 'postgres://app@pgbouncer.example:6432/tasks',
      DATABASE_LISTEN_URL: PG,
      DB_PREPARED_STATEMENTS: 'false',
    });
    expect(config.databaseListenUrl).toBe(PG);
    expect(config.db.preparedStatements).toBe(false);
  });

  it.each([
    [{ DATABASE_URL: PG, DATABASE_LISTEN_URL: 'mysql://db/tasks' }, 'DATABASE_LISTEN_URL'],
    [{ DATABASE_URL: PG, DATABASE_LISTEN_URL: 'no url' }, 'DATABASE_LISTEN_URL'],
    // PGlite listens in process: a listening URL without a server to write to is a mistake.
    [{ DATABASE_LISTEN_URL: PG }, 'DATABASE_LISTEN_URL'],
    [{ DATABASE_URL: PG, DB_PREPARED_STATEMENTS: 'sometimes' }, 'DB_PREPARED_STATEMENTS'],
  ])('refuse %j, naming %s', (env, variable) => {
    const err = refusalOf(env);
    expect(err.variable).toBe(variable);
    expect(err.message.startsWith(`${variable}: `)).toBe(true);
  });
});

describe.skipIf(backend === 'pglite')('an app configured for a pooler', () => {
  let database: TestDatabase;
  let t: TestApp;
  let admin: pg.Client;
  // Marks the listening connection, so pg_stat_activity tells it from the pool's.
  const LISTENER = 'taskhandle_listener_under_test';

  beforeAll(async () => {
    database = await freshDatabase();
    const listenUrl = new URL(database.url!);
    listenUrl.searchParams.set('application_name', LISTENER);
    t = await startTestApp({
      database,
      env: { DATABASE_LISTEN_URL: listenUrl.toString(), DB_PREPARED_STATEMENTS: 'false' },
    });
    admin = new pg.Client({ connectionString: database.url });
    await admin.connect();
  });
  afterAll(async () => {
    await admin?.end();
    await t?.stop();
    await database?.drop();
  });

  it('runs a statement marked for preparing unnamed, so no connection keeps it', async () => {
    await t.app.db.kysely.connection().execute(async (db) => {
      for (const n of [1, 2, 3]) {
        const { rows } = await sql<{ n: number }>`${prepared} select ${n}::int + 1 as n`.execute(
          db,
        );
        expect(rows).toEqual([{ n: n + 1 }]);
      }
      const { rows } = await sql<{ name: string }>`
        select name from pg_prepared_statements`.execute(db);
      expect(rows).toEqual([]);
    });
  });

  it('starts and finishes tasks, their statements unnamed, and hears of it over its own listening connection', async () => {
    const alice = await t.token('alice');
    const client = t.ws(alice);
    const started = await t.gql(
      `mutation { startTask(input: { kind: "sleep", input: { ms: 0 } }) { id } }`,
      {},
      alice,
    );
    const id = started.data.startTask.id as string;
    // COMPLETED reaches a subscriber only through the hub, which learns of changes by NOTIFY.
    const final = await new Promise<string>((resolve, reject) => {
      client.subscribe<{ taskUpdated: { status: string } }>(
        { query: `subscription($id: ID!) { taskUpdated(id: $id) { status } }`, variables: { id } },
        {
          next: ({ data }) => {
            if (data?.taskUpdated.status === 'COMPLETED') resolve(data.taskUpdated.status);
          },
          error: reject,
          complete: () => reject(new Error('ended before COMPLETED')),
        },
      );
    });
    expect(final).toBe('COMPLETED');

    const { rows } = await admin.query<{ application_name: string; query: string }>(
      `select application_name, query from pg_stat_activity
        where datname = current_database() and pid <> pg_backend_pid()`,
    );
    // One listening connection, the one at DATABASE_LISTEN_URL; the pool's connections listen to nothing.
    expect(rows.filter((r) => r.application_name === LISTENER)).toHaveLength(1);
    const pooled = rows.filter((r) => r.application_name !== LISTENER);
    expect(pooled.length).toBeGreaterThan(0);
    expect(pooled.some((r) => /^\s*listen /i.test(r.query))).toBe(false);
  });
});
