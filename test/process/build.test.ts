import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, SECRET } from '../helpers/app.js';
import { backend, freshDatabase, type TestDatabase } from '../helpers/db.js';
import { lockDist } from '../helpers/dist-lock.js';
import { gqlAt, ROOT } from '../helpers/process.js';
import { readWriteToken } from '../helpers/secret.js';

/** The production start: `npm run build`, then `node dist/main.js` with no TypeScript loader. */

let database: TestDatabase | undefined;
const dataDir = mkdtempSync(join(tmpdir(), 'taskhandle-build-'));

let unlockDist: (() => void) | undefined;

beforeAll(async () => {
  if (backend === 'pg') database = await freshDatabase();
  unlockDist = await lockDist();
  await promisify(execFile)('npm', ['run', 'build'], { cwd: ROOT });
}, 300_000);
afterAll(async () => {
  unlockDist?.();
  await database?.drop();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('npm run build', { timeout: 120_000 }, () => {
  it('compiles to dist/, and node dist/main.js migrates, runs tasks (a worker thread too) and stops with 0', async () => {
    expect(existsSync(join(ROOT, 'dist/main.js'))).toBe(true);
    const child = spawn(process.execPath, ['dist/main.js'], {
      cwd: ROOT,
      env: {
        ...process.env,
        NODE_ENV: 'production',
        PORT: '0',
        HOST: '127.0.0.1',
        AUTH_JWT_SECRET: SECRET,
        DATA_DIR: dataDir,
        LOG_LEVEL: 'info',
        ...(database?.url ? { DATABASE_URL: database.url } : { DATABASE_URL: '' }),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const exited = new Promise<number | null>((resolve) => child.once('close', resolve));
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    try {
      const url = await eventually(async () => {
        if (child.exitCode !== null) throw new Error(`exited: ${stderr}`);
        return stdout.match(/"url":"(http:[^"]+)"/)?.[1];
      }, 30_000);
      expect((await fetch(`${url}/readyz`)).status).toBe(200);
      // No loader in this process: the primes sieve's worker thread loads a file from dist/.
      const token = await readWriteToken();
      const started = await gqlAt(
        url,
        'mutation { startTask(input: { kind: "primes", input: { limit: 100000 } }) { id } }',
        {},
        token,
      );
      const id = started.data.startTask.id;
      const done = await eventually(async () => {
        const { data } = await gqlAt(
          url,
          'query($id: ID!) { task(id: $id) { status result } }',
          { id },
          token,
        );
        return data.task.status === 'WORKING' ? undefined : data.task;
      }, 20_000);
      expect(done).toEqual({ status: 'COMPLETED', result: { limit: 100000, count: 9592 } });
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited).toBe(0);
    expect(stderr).toBe('');
  });
});
