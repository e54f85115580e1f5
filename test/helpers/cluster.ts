import { mintToken } from '../../src/auth/mint.js';
import { databaseEnv } from './database-env.js';
import { freshDatabase, type TestDatabase } from './db.js';
import {
  loggedLine,
  type NodeProcess,
  SERVER_ENV,
  type ServerOptions,
  type ServerProcess,
  spawnNode,
  spawnServer,
} from './process.js';
import { SECRET } from './secret.js';

/** Several server processes, started as users start them, on one throwaway Postgres database. */
export interface Cluster<Servers extends ServerProcess[] = ServerProcess[]> {
  database: TestDatabase;
  /** One listening process per role asked for, in the order asked. */
  servers: Servers;
  /** Mints a token the servers accept for `sub` (default scopes: read and write), valid 1 h. */
  token(sub: string, scopes?: readonly string[]): Promise<string>;
  /** Stops every process with SIGTERM, then drops the database. */
  stop(): Promise<void>;
}

/**
 * Clones a fresh database and starts one `src/main.ts` process per entry of `roles` on it, all
 * at once; resolves when every one listens. Postgres only: PGlite lives inside one process.
 * If any process fails to start, stops the others, drops the database and rejects.
 */
export async function spawnCluster<const Roles extends readonly ServerOptions['role'][]>(
  roles: Roles,
): Promise<Cluster<{ -readonly [K in keyof Roles]: ServerProcess }>> {
  const database = await freshDatabase();
  const databaseUrl = database.url;
  if (!databaseUrl) throw new Error('a cluster of processes needs Postgres (DATABASE_URL)');
  const started = await Promise.allSettled(roles.map((role) => spawnServer({ role, databaseUrl })));
  const servers = started.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
  const stop = async () => {
    await Promise.all(servers.map((s) => s.stop('SIGTERM')));
    await database.drop();
  };
  const failed = started.find((s) => s.status === 'rejected');
  if (failed) {
    await stop();
    throw failed.reason;
  }
  return {
    database,
    servers: servers as { -readonly [K in keyof Roles]: ServerProcess },
    token: (sub, scopes = ['tasks:read', 'tasks:write']) =>
      mintToken(SECRET, { sub, scopes, ttl: '1h' }),
    stop,
  };
}

/** A fixture server process: a script under test/helpers that serves its own kinds. */
export interface FixtureServer {
  node: NodeProcess;
  url: string;
  pid: number;
}

/**
 * Starts `script` (test/helpers/work-server.ts, questions-server.ts, …) on `databaseUrl` as
 * the multi-process suites run it, and resolves once it logs `ready` with its url and pid.
 */
export async function spawnFixtureServer(
  script: string,
  ready: string,
  databaseUrl: string,
  env: Record<string, string> = {},
): Promise<FixtureServer> {
  const node = spawnNode(script, {
    ...process.env,
    NODE_ENV: 'test',
    ...SERVER_ENV,
    LOG_LEVEL: 'warn',
    ...databaseEnv(databaseUrl),
    ...env,
  });
  const line = await loggedLine(node, ready, { name: script, timeoutMs: 120_000 });
  return { node, url: line.url as string, pid: line.pid as number };
}
