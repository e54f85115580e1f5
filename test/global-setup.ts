import { rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { directUrl } from './helpers/database-env.js';
import { migratedPGliteImage, recreateMigratedDatabase } from './helpers/migrated-database.js';

/**
 * Builds one migrated template for this run, which every test database is cloned from
 * (test/helpers/db.ts): with DATABASE_URL set, a template database on that server; without
 * it, a PGlite data directory tarball each in-memory PGlite starts from (initdb and the
 * migrations would otherwise cost each app seconds of CPU).
 */
export default async function setup(project: TestProject) {
  const url = directUrl();
  if (!process.env.DATABASE_URL || !url) {
    const file = join(tmpdir(), `taskhandle-pglite-${process.pid}.tar`);
    await writeFile(file, await migratedPGliteImage());
    project.provide('pgliteImage', file);
    return () => rm(file, { force: true });
  }
  const template = `taskhandle_tpl_${process.pid}`;
  await recreateMigratedDatabase(url, template);
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  project.provide('pgTemplate', template);
  project.provide('pgRun', String(process.pid));
  return async () => {
    // Drop databases this run's crashed test files left, then the template. Only this run's:
    // other runs may share the server (and `_` in a LIKE pattern matches any character).
    const left = await admin.query<{ datname: string }>(
      `select datname from pg_database where starts_with(datname, $1) or datname = $2`,
      [`taskhandle_t_${process.pid}_`, template],
    );
    for (const { datname } of left.rows)
      await admin.query(`drop database if exists ${datname} with (force)`);
    await admin.end();
  };
}

declare module 'vitest' {
  export interface ProvidedContext {
    /** PGlite runs: the migrated data directory tarball (PGlite's dumpDataDir). */
    pgliteImage: string;
    pgTemplate: string;
    /** Prefixes this run's databases, so its teardown drops its own only. */
    pgRun: string;
  }
}
