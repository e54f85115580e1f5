import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { mintToken } from '../../src/auth/mint.js';
import { freshDatabase, seedDataDir } from './db.js';
import { type ServerProcess, spawnServer } from './process.js';
import { SECRET } from './secret.js';

/**
 * A server process for the client's tests, on a database that outlives it (a Postgres
 * database of its own, or a PGlite data directory), so it can be stopped and started again
 * on the same port.
 */
export interface ClientServer {
  readonly port: number;
  readonly url: string;
  readonly process: ServerProcess;
  /** Starts the server again on the same port and database (after `process.stop`). */
  restart(): Promise<ServerProcess>;
  token(sub: string): Promise<string>;
  close(): Promise<void>;
}

/** A port free right now on 127.0.0.1. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
    server.once('error', reject);
  });
}

export async function startClientServer(env: Record<string, string> = {}): Promise<ClientServer> {
  const database = await freshDatabase();
  const dataDir = mkdtempSync(join(tmpdir(), 'taskhandle-client-'));
  await seedDataDir(dataDir);
  const port = await freePort();
  const spawn = () =>
    spawnServer({
      role: 'all',
      databaseUrl: database.url ?? '',
      env: { PORT: String(port), DATA_DIR: dataDir, ...env },
    });
  let current = await spawn();
  return {
    port,
    url: current.url,
    get process() {
      return current;
    },
    async restart() {
      current = await spawn();
      return current;
    },
    token: (sub) => mintToken(SECRET, { sub, scopes: ['tasks:read', 'tasks:write'], ttl: '1h' }),
    async close() {
      await current.stop('SIGKILL');
      await database.drop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
