import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../../helpers/app.js';
import { backend, freshDatabaseAndClient, type TestDatabase } from '../../helpers/db.js';
import { START_HANDLE } from '../../helpers/operations.js';
import { gqlAt, type ServerProcess, spawnServer } from '../../helpers/process.js';
import { readWriteToken } from '../../helpers/secret.js';
import { onTaskChange } from '../../helpers/task-changes.js';
import { proxyFor, type TcpProxy } from '../../helpers/tcp-proxy.js';

/**
 * A start inserted already claimed by its own process (docs/kinds.md) whose answer is lost
 * after the commit: the connection drops between Postgres's commit and its answer. The client
 * hears SERVICE_UNAVAILABLE, the task is stored leased to a process that does not know it runs
 * it, and it must run at once rather than after its lease lapses. A server process behind a
 * TCP proxy, listening on a direct connection. Postgres only: PGlite has no network.
 */

/** Far longer than the test waits: a task left leased would not run within it. */
const LEASE_MS = 120_000;
const LIST = 'query { tasks(first: 1) { edges { node { id } } } }';

let database: TestDatabase;
let proxy: TcpProxy;
let server: ServerProcess;
let direct: pg.Client;
let token: string;

const graphql = (query: string, variables: Record<string, unknown>) =>
  gqlAt(server.url, query, variables, token);

/** The task stored under `key`, as Postgres has it now. */
async function storedUnder(key: string) {
  const { rows } = await direct.query(
    'select id, status, worker_id, attempt from tasks where idempotency_key = $1',
    [key],
  );
  return rows[0] as { id: string; status: string; worker_id: string | null; attempt: number };
}

describe.skipIf(backend === 'pglite')('a start that is its own claim, its answer lost', () => {
  beforeAll(async () => {
    ({ database, client: direct } = await freshDatabaseAndClient());
    token = await readWriteToken();
    proxy = await proxyFor(database.url!);
    server = await spawnServer({
      role: 'all',
      databaseUrl: proxy.via(database.url!),
      env: {
        DATABASE_LISTEN_URL: database.url!,
        RUNNER_CONCURRENCY: '1',
        TASK_LEASE_MS: String(LEASE_MS),
        DB_STATEMENT_TIMEOUT_MS: '2000',
      },
    });
  });
  afterAll(async () => {
    await server?.stop('SIGKILL');
    await proxy?.close();
    await direct?.end();
    await database?.drop();
  });

  it('runs at once, not after its lease lapses', { timeout: 90_000 }, async () => {
    // A first start, run to its end: the slot and the pool are warm, and the runner knows no
    // task is waiting (a start that came while the runner's first claim was still out is
    // claimed by the next one, and a claim cut short by a try below would leave it waiting).
    const first = await graphql(START_HANDLE, { input: { kind: 'sleep', input: { ms: 0 } } });
    expect(first.errors).toBeUndefined();
    const warm = await onTaskChange(
      direct,
      async () => {
        const { rows } = await direct.query('select status from tasks where id = $1', [
          first.data.startTask.id,
        ]);
        return rows[0]?.status === 'completed' ? true : undefined;
      },
      30_000,
    );
    expect(warm).toBe(true);
    const { input, row } = await startLosingTheAnswer();

    // The task runs, on its first counted attempt, long before LEASE_MS.
    const now = await onTaskChange(
      direct,
      async () => {
        const stored = await storedUnder(input.idempotencyKey);
        return stored.status === 'completed' ? stored : undefined;
      },
      30_000,
    );
    expect(now).toMatchObject({ status: 'completed', attempt: 1 });
    // The retry the client makes finds it, completed.
    const replay = await graphql(START_HANDLE, { input });
    expect(replay.data.startTask).toMatchObject({ id: row.id, status: 'COMPLETED' });
    expect(server.child.exitCode).toBeNull();
  });
});

/**
 * Starts a task whose insert commits leased to the server's own runner and whose answer is
 * lost. Whether a start is inserted leased, and on which connection of the pool, is the
 * server's to decide: a start that waits for a new connection (which cannot finish connecting
 * while the proxy is deaf), or is not leased (a claim pass of the runner was in flight), is
 * not this case, and another is tried.
 */
async function startLosingTheAnswer() {
  for (let tries = 0; tries < 10; tries++) {
    // A pool connection open and idle, for the start to be sent on: the server answers a
    // read from the database again (the previous try cut its connections).
    await eventually(async () => ((await graphql(LIST, {})).errors ? undefined : true), 30_000);
    proxy.deafen();
    const input = { kind: 'sleep', input: { ms: 0 }, idempotencyKey: randomUUID() };
    const answer = graphql(START_HANDLE, { input });
    // Its insert's notification, heard on the direct connection past the deaf proxy.
    const row = await onTaskChange(direct, () => storedUnder(input.idempotencyKey), 3_000);
    proxy.reset();
    proxy.restore();
    const heard = await answer;
    if (!row || row.worker_id === null || !heard.errors) continue;
    expect(heard.errors[0].extensions.code).toBe('SERVICE_UNAVAILABLE');
    return { input, row };
  }
  throw new Error('no start was inserted leased with its answer lost in 10 tries');
}
