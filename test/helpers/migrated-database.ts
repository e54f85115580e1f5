import { PGlite } from '@electric-sql/pglite';
import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import { migrate } from '../../src/db/migrate.js';
import { PGliteDialect } from '../../src/db/pglite-dialect.js';
import type { Database } from '../../src/db/types.js';

/**
 * Drops database `name` on the server of `adminUrl` (whoever is connected), creates it anew
 * and runs every migration; returns its URL. The tests' template and the benchmark's
 * database are both made so.
 */
export async function recreateMigratedDatabase(adminUrl: string, name: string): Promise<string> {
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(`drop database if exists ${name} with (force)`);
    await admin.query(`create database ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  const db = new Kysely<Database>({
    dialect: new PostgresDialect({
      pool: new pg.Pool({ connectionString: url.toString(), max: 1 }),
    }),
  });
  try {
    await migrate(db);
  } finally {
    await db.destroy();
  }
  return url.toString();
}

/** A fresh in-memory PGlite cluster with every migration run, as an uncompressed tarball. */
export async function migratedPGliteImage(): Promise<Uint8Array> {
  const pglite = await PGlite.create('memory://');
  const db = new Kysely<Database>({ dialect: new PGliteDialect(pglite) });
  try {
    await migrate(db);
    return new Uint8Array(await (await pglite.dumpDataDir('none')).arrayBuffer());
  } finally {
    await db.destroy();
    await pglite.close();
  }
}
