import { readdir, readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { type Kysely, sql } from 'kysely';
import type { Database } from './types.js';

const MIGRATIONS_DIR = fileURLToPath(new URL('../../migrations/', import.meta.url));
/** Any fixed number; every booting process takes the same transaction-scoped advisory lock. */
const MIGRATION_LOCK = 7_316_202_611;

/**
 * Applies the numbered SQL files in `migrations/` that have not run yet, in order, in one
 * transaction under an advisory lock: processes booting together apply each file once.
 * Landed files are never edited; a new change is a new file.
 * @returns the names applied by this call
 */
export async function migrate(db: Kysely<Database>, dir = MIGRATIONS_DIR): Promise<string[]> {
  const files = (await readdir(dir)).filter((f) => /^\d+_[\w-]+\.sql$/.test(f)).sort();
  return db.transaction().execute(async (trx) => {
    await sql`select pg_advisory_xact_lock(${MIGRATION_LOCK}::bigint)`.execute(trx);
    await sql`create table if not exists taskhandle_migrations (
      name text primary key,
      applied_at timestamptz not null default now()
    )`.execute(trx);
    const done = await sql<{ name: string }>`select name from taskhandle_migrations`.execute(trx);
    const applied = new Set(done.rows.map((r) => r.name));
    const ran: string[] = [];
    for (const file of files) {
      if (applied.has(file)) continue;
      await sql.raw(await readFile(`${dir}/${file}`, 'utf8')).execute(trx);
      await sql`insert into taskhandle_migrations (name) values (${file})`.execute(trx);
      ran.push(file);
    }
    return ran;
  });
}

/** True once every migration file has been applied. */
export async function isMigrated(db: Kysely<Database>, dir = MIGRATIONS_DIR): Promise<boolean> {
  const files = (await readdir(dir)).filter((f) => /^\d+_[\w-]+\.sql$/.test(f));
  const done = await sql<{ n: number }>`
    select count(*)::int as n from taskhandle_migrations where name = any(${files}::text[])`.execute(
    db,
  );
  return done.rows[0]?.n === files.length;
}
