import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../helpers/app.js';
import { backend, freshDatabase, seedDataDir, type TestDatabase } from '../helpers/db.js';
import {
  alive,
  gqlAt,
  groupAlive,
  type NpmStart,
  parentOf,
  spawnNpmStart,
} from '../helpers/process.js';
import { readWriteToken } from '../helpers/secret.js';

/**
 * Starting and stopping the server exactly as its users do: `npm start` in a process group
 * of its own (a terminal's, or a container whose first process is `npm start`), stopped by
 * each of the signals such a setup sends, while a task runs.
 */

const START = `mutation($input: StartTaskInput!) { startTask(input: $input) { id } }`;
const GET = `query($id: ID!) { task(id: $id) { status progress } }`;

const databases: TestDatabase[] = [];
const dirs: string[] = [];
const started: NpmStart[] = [];
let token: string;

beforeAll(async () => {
  token = await readWriteToken();
});
afterAll(async () => {
  for (const s of started) s.signalGroup('SIGKILL');
  await Promise.all(started.map((s) => s.exited));
  for (const database of databases) await database.drop();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/**
 * `npm start` on this run's backend: a fresh Postgres database, or PGlite in a DATA_DIR of
 * its own. That DATA_DIR is new and empty with `fresh` (the server runs initdb and every
 * migration, as on a first start); else it holds the run's migrated database, as a server
 * that ran before leaves it (initdb costs PGlite seconds of CPU, and only one test is about it).
 */
async function npmStart(
  env: Record<string, string> = {},
  { fresh = false } = {},
): Promise<{ server: NpmStart; dataDir: string; databaseUrl: string | undefined }> {
  const dataDir = mkdtempSync(join(tmpdir(), 'taskhandle-start-'));
  dirs.push(dataDir);
  const database = backend === 'pg' ? await freshDatabase() : undefined;
  if (database) databases.push(database);
  if (!fresh) await seedDataDir(dataDir);
  const server = await spawnNpmStart({
    DATA_DIR: dataDir,
    DATABASE_URL: database?.url,
    TASK_SHUTDOWN_GRACE_MS: '200',
    LOG_LEVEL: 'debug',
    ...env,
  });
  started.push(server);
  return { server, dataDir, databaseUrl: database?.url };
}

/** Starts an hour of sleep and resolves once this server runs it (its progress has moved). */
async function runningTask(server: NpmStart): Promise<string> {
  const started = await gqlAt(
    server.url,
    START,
    { input: { kind: 'sleep', input: { ms: 600_000, steps: 1000 } } },
    token,
  );
  expect(started.errors).toBeUndefined();
  const id = started.data.startTask.id as string;
  await eventually(async () => {
    const { data } = await gqlAt(server.url, GET, { id }, token);
    return data.task.progress > 0 ? true : undefined;
  }, 20_000);
  return id;
}

interface LeaseRow {
  status: string;
  worker_id: string | null;
  attempt: number;
}

/** The task's row as stored, read once the server is gone. */
async function rowAfterExit(
  id: string,
  dataDir: string,
  databaseUrl: string | undefined,
): Promise<LeaseRow> {
  const query = 'select status, worker_id, attempt from tasks where id = $1';
  if (databaseUrl) {
    const client = new pg.Client({ connectionString: databaseUrl });
    await client.connect();
    try {
      return (await client.query<LeaseRow>(query, [id])).rows[0]!;
    } finally {
      await client.end();
    }
  }
  const pglite = await PGlite.create(join(dataDir, 'pgdata'));
  try {
    return (await pglite.query<LeaseRow>(query, [id])).rows[0]!;
  } finally {
    await pglite.close();
  }
}

/** `ps` of a process group, for a failure's message. */
const members = (pgid: number) =>
  spawnSync('ps', ['-o', 'pid,ppid,stat,etime,cmd', '-g', String(pgid)], { encoding: 'utf8' })
    .stdout;

const count = (server: NpmStart, msg: string) => server.logs().filter((l) => l.msg === msg).length;

describe('npm start', { timeout: 180_000 }, () => {
  it('runs the server as one node process, a direct child of npm, and prints first a URL that answers', async () => {
    const { server } = await npmStart({}, { fresh: true });
    // No shell and no tsx wrapper between npm and the server: a signal reaches it directly.
    expect(parentOf(server.nodePid)).toBe(server.npm.pid);
    const children = readFileSync(`/proc/${server.npm.pid}/task/${server.npm.pid}/children`, 'utf8')
      .trim()
      .split(/\s+/)
      .map(Number);
    expect(children).toEqual([server.nodePid]);

    const first = await eventually(async () => {
      const printed = server
        .stdout()
        .split('\n')
        .filter((line) => !line.startsWith('{') && !line.startsWith('>'));
      return printed.join('\n').match(/https?:\/\/[^\s,]+/)?.[0];
    });
    const response = await fetch(first, { headers: { accept: 'text/html' } });
    expect(response.status).toBe(200);

    server.signalGroup('SIGTERM');
    expect(await server.exited).toEqual({ code: 0, signal: null });
  });

  const ways: Array<[string, (s: NpmStart) => void]> = [
    ['SIGINT to the process group (Ctrl-C in a terminal)', (s) => s.signalGroup('SIGINT')],
    ['SIGTERM to the process group', (s) => s.signalGroup('SIGTERM')],
    ['SIGTERM to npm alone (a container runtime)', (s) => s.npm.kill('SIGTERM')],
    ['SIGTERM to the server process', (s) => process.kill(s.nodePid, 'SIGTERM')],
  ];
  for (const [how, send] of ways) {
    it(`stops gracefully once on ${how}, with a task running: lease released, exit 0, nothing left`, async () => {
      const { server, dataDir, databaseUrl } = await npmStart();
      const id = await runningTask(server);
      send(server);
      expect(await server.exited).toEqual({ code: 0, signal: null });

      expect(count(server, 'stopping')).toBe(1);
      expect(count(server, 'stopped')).toBe(1);
      expect(server.logs().some((l) => l.msg === 'second signal: exiting now')).toBe(false);
      expect(server.logs().find((l) => l.msg === 'runner stopped')).toMatchObject({
        aborted: 1,
        released: 1,
      });
      expect(alive(server.nodePid)).toBe(false);
      expect(groupAlive(server.npm.pid!), members(server.npm.pid!)).toBe(false);
      // Given back uncounted: the next worker takes it at once.
      expect(await rowAfterExit(id, dataDir, databaseUrl)).toEqual({
        status: 'working',
        worker_id: null,
        attempt: 0,
      });
    });
  }

  it('exits at once on a second Ctrl-C that comes later, while the first is still draining', async () => {
    // A grace period far longer than the test: only the second signal can end it.
    const { server } = await npmStart({ TASK_SHUTDOWN_GRACE_MS: '600000' });
    await runningTask(server);
    server.signalGroup('SIGINT');
    await eventually(async () =>
      server.logs().some((l) => l.msg === 'a second signal now forces the exit') ? true : undefined,
    );
    expect(count(server, 'stopping')).toBe(1);
    server.signalGroup('SIGINT');
    const exit = await server.exited;
    expect(exit.code).not.toBe(0);
    expect(count(server, 'second signal: exiting now')).toBe(1);
    expect(count(server, 'stopped')).toBe(0);
    expect(groupAlive(server.npm.pid!)).toBe(false);
  });
});
