import { mkdirSync } from 'node:fs';
import { PGlite } from '@electric-sql/pglite';
import { Kysely, PostgresDialect } from 'kysely';
import type { Logger } from 'pino';
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
    log: options.log,
  });
  const kysely = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  return {
    kysely,
    backend: 'pg',
    listener: (log) => new PgListener(databaseUrl, log, { timeouts: options.timeouts }),
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
