import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import { migrate } from '../../src/db/migrate.js';
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
