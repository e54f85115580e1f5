import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { directUrl } from './helpers/database-env.js';
import { recreateMigratedDatabase } from './helpers/migrated-database.js';

/**
 * With DATABASE_URL set, builds one migrated template database for this run; each test file
 * clones it into a database of its own (test/helpers/db.ts). Without it, tests use PGlite.
 */
export default async function setup(project: TestProject) {
  const url = directUrl();
  if (!process.env.DATABASE_URL || !url) return;
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
    pgTemplate: string;
    /** Prefixes this run's databases, so its teardown drops its own only. */
    pgRun: string;
  }
}
