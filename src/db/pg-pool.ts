import { createHash } from 'node:crypto';
import { type PostgresPool, type PostgresPoolClient, sql } from 'kysely';
import pg from 'pg';
import type { Logger } from 'pino';
import { faultClassifier, isReadOnlyFault } from './faults.js';
import { typeParsers } from './timestamps.js';
import { ensureWritable, ReportingClient } from './writable.js';

export interface PgTimeouts {
  /** Server-side `statement_timeout`, and the client-side wait for any one answer. */
  statementTimeoutMs: number;
  /** Opening a connection, or waiting for a free one in the pool. */
  connectTimeoutMs: number;
}

/**
 * Settings shared by every connection this process opens: bounded waits (a black-holed
 * server never answers, so the client must stop waiting on its own) and TCP keepalive (an
 * idle connection to a vanished server is noticed instead of looking healthy).
 */
export function clientConfig(databaseUrl: string, timeouts: PgTimeouts): pg.ClientConfig {
  return {
    connectionString: databaseUrl,
    statement_timeout: timeouts.statementTimeoutMs,
    query_timeout: timeouts.statementTimeoutMs,
    connectionTimeoutMillis: timeouts.connectTimeoutMs,
    keepAlive: true,
    keepAliveInitialDelayMillis: 5_000,
    types: typeParsers,
  };
}

/** Starts a statement that each connection prepares once and then runs by name. */
export const PREPARED = '/* prepared */';

/** {@link PREPARED} for a kysely `sql` template: sql`${prepared} select …`. */
export const prepared = sql.raw(PREPARED);

/** SQLSTATE of a statement sent in a transaction that an earlier error aborted. */
const IN_FAILED_TRANSACTION = '25P02';

/**
 * Postgres refusing a prepared statement because the tables it reads changed shape since it
 * was prepared (SQLSTATE 0A000, raised while re-planning it).
 */
function planOutdated(err: unknown): boolean {
  const { code, message } = err as { code?: unknown; message?: unknown };
  return code === '0A000' && message === 'cached plan must not change result type';
}

const names = new Map<string, string>();
/**
 * The statement name for a text that starts with {@link PREPARED}: hot statements of a fixed
 * shape skip parsing and, once Postgres settles on a generic plan, planning. Only marked texts
 * are prepared, so the set each connection keeps is small and fixed. Behind a transaction-mode
 * pooler (DB_PREPARED_STATEMENTS=false) nothing is named: the next transaction may run on a
 * server connection that never saw the statement, so every one is sent unnamed and whole.
 */
function preparedName(text: string): string | undefined {
  if (!text.startsWith(PREPARED)) return undefined;
  let name = names.get(text);
  if (name === undefined) {
    name = `th_${createHash('sha1').update(text).digest('hex').slice(0, 16)}`;
    names.set(text, name);
  }
  return name;
}

/**
 * A pg pool for kysely that no database fault can crash the process through, and whose
 * connection faults reach callers as `DatabaseUnavailable`:
 *
 * - every client gets its own 'error' listener when it is created, so a connection that dies
 *   while checked out (reset, crashed server) is logged, not an unhandled 'error' event; pg
 *   fails its query, and the pool drops it on release;
 * - a query that timed out on the client side leaves pg waiting for an answer on that
 *   connection (the next query would queue behind it), so the connection is ended instead;
 * - a prepared statement whose result type a migration changed since the connection prepared
 *   it (a column added to `tasks`: Postgres refuses it with "cached plan must not change
 *   result type", as a process still running while a newer one migrates would see) is sent
 *   again unnamed, parsed afresh, and the connection is dropped on release, so that the pool
 *   replaces it with one that prepares against the new schema;
 * - a connection is used only once it has proved to be on a server that takes writes
 *   (`ensureWritable`), and one that meets a read-only refusal (the server was, or became, a
 *   standby: a failover) is dropped on release, never reused: after a failover, only
 *   connections to the writable primary stay;
 * - connection and read-only faults are classified at this one place, for every face.
 */
export function guardedPool(
  databaseUrl: string,
  options: PgTimeouts & { max: number; preparedStatements: boolean; log: Logger },
): { pool: PostgresPool; raw: pg.Pool } {
  const { log, preparedStatements } = options;
  const classify = faultClassifier(log);
  const raw = new pg.Pool({
    ...clientConfig(databaseUrl, options),
    max: options.max,
    Client: ReportingClient,
  });
  // pg-pool's own listener covers idle clients only; it is removed while one is checked out.
  raw.on('connect', (client) => {
    client.on('error', (err) => log.warn({ err }, 'database connection lost'));
  });
  // An idle client whose server went away: the pool has already dropped it.
  raw.on('error', (err) => log.warn({ err }, 'idle database connection lost'));

  const wrapped = new WeakMap<pg.PoolClient, PostgresPoolClient>();
  /** Connections holding a prepared statement planned against an older schema. */
  const stale = new WeakSet<pg.PoolClient>();
  /** Connections a read-only server refused a statement on, with the refusal. */
  const refused = new WeakMap<pg.PoolClient, unknown>();
  const wrap = (client: pg.PoolClient): PostgresPoolClient => {
    let guarded = wrapped.get(client);
    if (guarded) return guarded;
    guarded = {
      query: (async (sql: string, parameters: readonly unknown[]) => {
        const name = preparedStatements ? preparedName(sql) : undefined;
        const values = parameters as unknown[];
        try {
          try {
            return await (name
              ? client.query({ name, text: sql, values })
              : client.query(sql, values));
          } catch (err) {
            if (!name || !planOutdated(err)) throw err;
            stale.add(client);
            log.info({ statement: name }, 'schema changed under a prepared statement; re-parsed');
            return await client.query(sql, values).catch((again: unknown) => {
              // In a transaction, the refusal aborted it: the first error says why.
              throw (again as { code?: string }).code === IN_FAILED_TRANSACTION ? err : again;
            });
          }
        } catch (err) {
          if (err instanceof Error && err.message === 'Query read timeout')
            void client.end().catch(() => {});
          if (isReadOnlyFault(err)) refused.set(client, err);
          // A transaction a refusal aborted: the refusal says why the rest fails.
          else if (
            (err as { code?: unknown } | null)?.code === IN_FAILED_TRANSACTION &&
            refused.has(client)
          )
            throw classify(refused.get(client));
          throw classify(err);
        }
      }) as unknown as PostgresPoolClient['query'],
      release: (destroy) =>
        client.release(destroy || stale.has(client) || refused.has(client) || undefined),
    };
    wrapped.set(client, guarded);
    return guarded;
  };

  return {
    raw,
    pool: {
      async connect() {
        let client: pg.PoolClient | undefined;
        try {
          client = await raw.connect();
          const known = wrapped.get(client);
          if (known) return known;
          // A new connection: to a writable server, or not kept.
          await ensureWritable(client);
          return wrap(client);
        } catch (err) {
          client?.release(true);
          throw classify(err);
        }
      },
      end: () => raw.end(),
    },
  };
}
