import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, inject } from 'vitest';
import type { Database, TaskRow } from '../../src/db/types.js';
import { directUrl } from './database-env.js';

/** One column of task `id`'s stored row, as the database has it now. */
export async function storedColumn<C extends keyof TaskRow>(
  db: Kysely<Database>,
  id: string,
  column: C,
): Promise<TaskRow[C]> {
  const row = await db
    .selectFrom('tasks')
    .selectAll()
    .where('id', '=', id)
    .executeTakeFirstOrThrow();
  return row[column];
}

/** Which backend this run tests: Postgres at DATABASE_URL, or embedded PGlite. */
export const backend: 'pg' | 'pglite' = process.env.DATABASE_URL ? 'pg' : 'pglite';

export interface TestDatabase {
  /** `postgres://…` of a database of its own; undefined on PGlite (each app gets `memory://`). */
  url: string | undefined;
  drop(): Promise<void>;
}

/**
 * A fresh database (see `freshDatabase`) and a client of the test's own on it, connected: what
 * Postgres holds, read past the server under test (Postgres only).
 */
export async function freshDatabaseAndClient(): Promise<{
  database: TestDatabase;
  client: pg.Client;
}> {
  const database = await freshDatabase();
  const client = new pg.Client({ connectionString: database.url });
  await client.connect();
  return { database, client };
}

/**
 * A kysely of the test's own on `database` (Postgres only), over at most `max` connections:
 * statements sent past the server under test, on connections whose count the test decides.
 *
 * Its pool listens for errors: `destroy()` resolves once each connection has been asked to
 * close, not once it has, and the drop that usually follows (`with (force)`) may terminate one
 * still open. Without a listener that termination would be thrown out of the pool, as an
 * unhandled error of whichever test file its worker was running by then.
 */
export function kyselyOn(database: TestDatabase, max: number): Kysely<Database> {
  const pool = new pg.Pool({ connectionString: database.url, max });
  pool.on('error', () => {}); // an idle connection lost: the pool has already dropped it
  return new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
}

/**
 * A throwaway database and {@link kyselyOn} it over `max` connections, for the describe block
 * that calls this: made before its tests, closed and dropped after them. Read `db` in tests.
 */
export function useDatabaseOn(max: number): { readonly db: Kysely<Database> } {
  let database: TestDatabase | undefined;
  let db: Kysely<Database> | undefined;
  beforeAll(async () => {
    database = await freshDatabase();
    db = kyselyOn(database, max);
  });
  afterAll(async () => {
    await db?.destroy();
    await database?.drop();
  });
  return {
    get db() {
      return db!;
    },
  };
}

/** A throwaway, migrated database, cloned from the run's template. */
export async function freshDatabase(): Promise<TestDatabase> {
  const pooled = process.env.DATABASE_URL;
  const base = directUrl();
  if (!pooled || !base) return { url: undefined, drop: async () => {} };
  const name = `taskhandle_t_${inject('pgRun')}_${process.pid}_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: base });
  await admin.connect();
  try {
    await admin.query(`create database ${name} template ${inject('pgTemplate')}`);
  } finally {
    await admin.end();
  }
  const url = new URL(pooled);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: async () => {
      const client = new pg.Client({ connectionString: base });
      await client.connect();
      try {
        await client.query(`drop database if exists ${name} with (force)`);
      } finally {
        await client.end();
      }
    },
  };
}

let image: Promise<Blob> | undefined;

/**
 * PGlite runs: the run's migrated data directory, for an in-memory PGlite to start from
 * (AppOptions.pgliteDataDir); read once per test file's process.
 */
export function pgliteImage(): Promise<Blob> {
  image ??= readFile(inject('pgliteImage')).then((bytes) => new Blob([bytes]));
  return image;
}

/**
 * PGlite runs: gives the data directory `dataDir` (a server's DATA_DIR) the run's migrated
 * database, as a server that ran before leaves it, so that the server starting on it skips
 * initdb and the migrations (seconds of CPU each; the tests about a first start leave their
 * DATA_DIR empty). Nothing on Postgres runs, where a server's database is its DATABASE_URL.
 */
export async function seedDataDir(dataDir: string): Promise<void> {
  if (backend !== 'pglite') return;
  const pgdata = join(dataDir, 'pgdata');
  await mkdir(pgdata, { recursive: true });
  // The image is the data directory as a tarball (PGlite's dumpDataDir), which is what
  // PGlite.create with loadDataDir would write here too: unpacked by tar, it costs a tenth of
  // the CPU of starting PGlite to write it.
  await promisify(execFile)('tar', ['-xf', inject('pgliteImage'), '-C', pgdata]);
}
