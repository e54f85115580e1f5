/**
 * The variables that put an app on a test database. In a run through a pooler (DATABASE_URL
 * a PgBouncer, DATABASE_LISTEN_URL the server behind it, DB_PREPARED_STATEMENTS=false: the CI
 * job in .ci/pgbouncer) each app gets the same pair for its own database, so its LISTEN goes
 * direct to the database it writes through the pooler.
 */
export function databaseEnv(url: string): Record<string, string> {
  const env: Record<string, string> = { DATABASE_URL: url };
  const listen = process.env.DATABASE_LISTEN_URL;
  if (listen) env.DATABASE_LISTEN_URL = onDatabaseOf(listen, url);
  const prepared = process.env.DB_PREPARED_STATEMENTS;
  if (prepared) env.DB_PREPARED_STATEMENTS = prepared;
  return env;
}

/**
 * The server's own address, not the pooler's: creating, cloning and dropping databases goes
 * there, because a pooler keeps idle server connections to a database, which a clone of it
 * or a drop would otherwise wait on.
 */
export function directUrl(): string | undefined {
  return process.env.DATABASE_LISTEN_URL ?? process.env.DATABASE_URL;
}

/** `server`'s address with `database`'s database name. */
export function onDatabaseOf(server: string, database: string): string {
  const url = new URL(server);
  url.pathname = new URL(database).pathname;
  return url.toString();
}
