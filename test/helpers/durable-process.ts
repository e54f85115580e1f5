import { readdirSync } from 'node:fs';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, expect } from 'vitest';
import { mintToken } from '../../src/auth/mint.js';
import { eventually, SECRET } from './app.js';
import { freshDatabase, type TestDatabase } from './db.js';
import { gqlAt, type ServerProcess, spawnServer } from './process.js';

/**
 * The suites of server processes (`src/main.ts`, ./process.ts) sharing one Postgres
 * database: `useProcessSuite()` inside a test file's describe gives it a database, a client on
 * it and one API process; the bindings below then hold them (ES modules export them live).
 */

export const SHORT_LEASE_MS = 1_500;

/** Every process this file started. */
export const servers: ServerProcess[] = [];
export let database: TestDatabase | undefined;
export let client: pg.Client | undefined;
export let api: ServerProcess;
export let alice: string;
/** Servers that outlive one test (the API process, a describe block's workers). */
export const kept = new Set<ServerProcess>();

export async function kill(...which: ServerProcess[]): Promise<void> {
  await Promise.all(which.map((s) => s.stop('SIGKILL')));
}

/** Spawns `src/main.ts` in `role` (debug logs: claims and aborts) and resolves once it listens. */
export async function startServer(
  role: 'api' | 'worker' | 'all',
  env: Record<string, string> = {},
): Promise<ServerProcess> {
  const server = await spawnServer({
    role,
    databaseUrl: database!.url!,
    env: { LOG_LEVEL: 'debug', ...env },
  });
  servers.push(server);
  return server;
}

export const START = `mutation($input: StartTaskInput!) { startTask(input: $input) { id status version } }`;
export const ANSWER = `mutation($id: ID!, $key: String!, $value: JSON!) { provideTaskInput(id: $id, key: $key, value: $value) { id status version } }`;
export const GET = `query($id: ID!) { task(id: $id) { id status version result error { code } inputRequest { key } } }`;

export async function startTask(kind: string, input: unknown): Promise<string> {
  const response = await gqlAt(api.url, START, { input: { kind, input } }, alice);
  expect(response.errors).toBeUndefined();
  return response.data.startTask.id;
}

export interface Row {
  id: string;
  status: string;
  worker_id: string | null;
  lease_expires_at: Date | null;
  attempt: number;
  progress: number | null;
  result: any;
  error: any;
}

export async function row(id: string): Promise<Row> {
  const result = await client!.query<Row>(
    'select id, status, worker_id, lease_expires_at, attempt, progress, result, error from tasks where id = $1',
    [id],
  );
  return result.rows[0]!;
}

/** The server whose log says it claimed `taskId` on `attempt`. */
export function claimant(
  candidates: ServerProcess[],
  taskId: string,
  attempt: number,
): ServerProcess | undefined {
  return candidates.find((s) =>
    s.logs().some((l) => l.msg === 'task claimed' && l.taskId === taskId && l.attempt === attempt),
  );
}

/**
 * `claimant`, once its log line has been read: the line leaves the server as it claims, and
 * may reach this process after the state the claim led to is visible in the database.
 */
export function claimedBy(
  candidates: ServerProcess[],
  taskId: string,
  attempt: number,
): Promise<ServerProcess> {
  return eventually(async () => claimant(candidates, taskId, attempt));
}

/** OS threads of a process: a worker thread (the primes sieve) adds at least one. */
export const threads = (pid: number) => readdirSync(`/proc/${pid}/task`).length;

/** A short lease (heartbeats every 500 ms), for the API process and most workers. */
export const short = { TASK_LEASE_MS: String(SHORT_LEASE_MS) };

/**
 * A lease no stall of a busy machine outlasts (heartbeats every 3.3 s): for the worker that
 * takes a task over when what a test tries is another worker's lapse, not its own.
 */
export const long = { TASK_LEASE_MS: '10000' };

export function useProcessSuite(): void {
  // One database and one API process for the file; each test starts the workers it needs.
  beforeAll(async () => {
    database = await freshDatabase();
    client = new pg.Client({ connectionString: database.url });
    await client.connect();
    api = await startServer('api', short);
    kept.add(api);
    alice = await mintToken(SECRET, {
      sub: 'alice',
      scopes: ['tasks:read', 'tasks:write'],
      ttl: '1h',
    });
  });
  afterAll(async () => {
    await kill(...servers);
    await client?.end();
    await database?.drop();
  });
  // Nothing a test leaves running or active may reach the next test.
  afterEach(async () => {
    await kill(...servers.filter((s) => !kept.has(s)));
    await client!.query(
      `update tasks set status = 'cancelled', version = version + 1 where status in ('working', 'input_required')`,
    );
  });
}
