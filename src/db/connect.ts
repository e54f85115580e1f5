import { mkdirSync } from 'node:fs';
import { PGlite } from '@electric-sql/pglite';
import { Kysely, PostgresDialect } from 'kysely';
import type { Logger } from 'pino';
import { DatabaseBreaker, DatabaseProbe } from './breaker.js';
import { type Listener, PGliteListener, PgListener } from './listen.js';
import { guardedPool, type PgTimeouts } from './pg-pool.js';
import { PGliteDialect } from './pglite-dialect.js';
import type { Database } from './types.js';

export type Backend = 'pg' | 'pglite';

/** The process's database: a kysely instance, its backend, and a way to open the one LISTEN connection. */
export interface Db {
  readonly kysely: Kysely<Database>;
  readonly backend: Backend;
  /** Opens a dedicated listening connection (never one from the pool). */
  listener(log: Logger): Listener;
  close(): Promise<void>;
}

export interface ConnectOptions {
  databaseUrl: string | undefined;
  /** pg only: the LISTEN connection's server, when databaseUrl is a pooler. @default databaseUrl */
  listenUrl?: string | undefined;
  /** pg only: run marked statements by name (src/db/pg-pool.ts). @default true */
  preparedStatements?: boolean;
  /** PGlite's directory when there is no databaseUrl; `memory://` for a throwaway database. */
  dataDir: string;
  /**
   * PGlite in memory only: the data directory to start from, as PGlite's `dumpDataDir` wrote
   * it, instead of an empty cluster (initdb takes seconds of CPU).
   */
  pgliteDataDir?: Blob | undefined;
  /** Pool size for pg. @default 10 */
  poolSize?: number;
  /** pg only: PGlite runs in this process, with no network to wait on. */
  timeouts: PgTimeouts;
  log: Logger;
}

export async function connect(options: ConnectOptions): Promise<Db> {
  return options.databaseUrl
    ? connectPg(options.databaseUrl, options)
    : connectPGlite(options.dataDir, options.pgliteDataDir);
}

function connectPg(databaseUrl: string, options: ConnectOptions): Db {
  const { pool } = guardedPool(databaseUrl, {
    ...options.timeouts,
    max: options.poolSize ?? 10,
    preparedStatements: options.preparedStatements ?? true,
    log: options.log,
  });
  // Fails fast while the database is unreachable (DESIGN §12); PGlite has no network.
  const breaker = new DatabaseBreaker(new DatabaseProbe(databaseUrl), options.log);
  const kysely = new Kysely<Database>({
    dialect: new PostgresDialect({ pool: breaker.guard(pool) }),
  });
  // LISTEN holds its session open between transactions, which a transaction-mode pooler
  // does not keep: it may take a direct connection of its own.
  const listenUrl = options.listenUrl ?? databaseUrl;
  return {
    kysely,
    backend: 'pg',
    listener: (log) => {
      const listener = new PgListener(listenUrl, log, { timeouts: options.timeouts });
      // Back from an outage or a failover: LISTEN need not wait out its backoff.
      breaker.onClose(() => listener.retryNow());
      return listener;
    },
    close: () => kysely.destroy(),
  };
}

async function connectPGlite(dataDir: string, image: Blob | undefined): Promise<Db> {
  const inMemory = dataDir.includes('://');
  if (!inMemory) mkdirSync(dataDir, { recursive: true });
  const pglite = await PGlite.create(
    inMemory ? dataDir : `${dataDir.replace(/\/$/, '')}/pgdata`,
    inMemory && image ? { loadDataDir: image } : {},
  );
  const kysely = new Kysely<Database>({ dialect: new PGliteDialect(pglite) });
  return {
    kysely,
    backend: 'pglite',
    listener: () => new PGliteListener(pglite),
    close: async () => {
      await kysely.destroy();
      await pglite.close();
    },
  };
}
