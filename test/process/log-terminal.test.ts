import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stripVTControlCharacters } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { databaseEnv } from '../helpers/database-env.js';
import { freshDatabase, seedDataDir, type TestDatabase } from '../helpers/db.js';
import { ROOT, SERVER_ENV } from '../helpers/process.js';

/** Log lines on a terminal (a pseudo-terminal from `script`), as a person starts the server. */

const quote = (s: string) => `'${s.replaceAll("'", "'\\''")}'`;

const databases: TestDatabase[] = [];
const dirs: string[] = [];
afterAll(async () => {
  for (const database of databases) await database.drop();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/**
 * The server on a terminal in `nodeEnv`: what it printed up to its "listening" line. On this
 * run's backend, with a database migrated before (a fresh Postgres one, or a PGlite DATA_DIR
 * holding it): what is printed is the subject, not a first start's initdb.
 */
async function onTerminal(nodeEnv: string): Promise<string> {
  const database = await freshDatabase();
  databases.push(database);
  const dataDir = mkdtempSync(join(tmpdir(), 'taskhandle-terminal-'));
  dirs.push(dataDir);
  await seedDataDir(dataDir);
  const command = ['node', '--import', 'tsx', 'src/main.ts'].map(quote).join(' ');
  const child = spawn('script', ['-qfec', command, '/dev/null'], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH ?? '',
      NODE_ENV: nodeEnv,
      DATA_DIR: dataDir,
      ...(database.url ? databaseEnv(database.url) : {}),
      ...SERVER_ENV,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let output = '';
  let listened = false;
  return new Promise<string>((resolve, reject) => {
    // Cleared once settled: the test process goes on to other files (vitest isolate: false).
    const timer = setTimeout(() => {
      process.kill(-child.pid!, 'SIGKILL');
      reject(new Error(`did not listen within 150 s: ${output}`));
    }, 150_000);
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      // A terminal ends lines with \r\n, and `.` stops at \r.
      if (!listened && /taskhandle listening[^\n]*\n/.test(output)) {
        listened = true;
        clearTimeout(timer);
        process.kill(-child.pid!, 'SIGTERM');
      }
    });
    // Settled once it has exited, so that its database and DATA_DIR are no longer in use.
    child.once('close', () => {
      clearTimeout(timer);
      if (listened) resolve(output);
      else reject(new Error(`exited before listening: ${output}`));
    });
  });
}

describe('logs on a terminal', { timeout: 180_000 }, () => {
  it('are one readable line per event in development, and JSON in production', async () => {
    const [development, production] = await Promise.all([
      onTerminal('development'),
      onTerminal('production'),
    ]);
    const plain = stripVTControlCharacters(development);
    expect(plain).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: taskhandle listening \{"url":/m);
    expect(plain).not.toContain('{"level"');
    expect(production).toMatch(/^\{"level":30,.*"msg":"taskhandle listening"\}\r?$/m);
  });
});
