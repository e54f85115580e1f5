import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import pg from 'pg';
import { inject } from 'vitest';
import { directUrl } from './database-env.js';

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
