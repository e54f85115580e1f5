import { type Client, createClient } from 'graphql-ws';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { eventually } from '../../helpers/app.js';
import { backend, freshDatabase, type TestDatabase } from '../../helpers/db.js';
import { CANCEL_TASK as CANCEL } from '../../helpers/operations.js';
import { gqlAt, type ServerProcess, spawnServer } from '../../helpers/process.js';
import { readWriteToken } from '../../helpers/secret.js';

/**
 * Many processes, one database: two api processes and a worker process, started as users
 * start them (`node --import tsx src/main.ts`), on one cloned database. PGlite lives inside
 * one process and cannot be shared, so this file runs on Postgres only.
 */

let database: TestDatabase;
let admin: pg.Client;
let api1: ServerProcess;
let api2: ServerProcess;
let alice: string;
const servers: ServerProcess[] = [];
const clients: Client[] = [];

/** Spawns `src/main.ts` in `role`; resolves once it listens. */
async function startServer(
  role: 'api' | 'worker',
  env: Record<string, string> = {},
): Promise<ServerProcess> {
  const server = await spawnServer({ role, databaseUrl: database.url!, env });
  servers.push(server);
  return server;
}

const gql = (server: ServerProcess, query: string, variables: Record<string, unknown>) =>
  gqlAt(server.url, query, variables, alice);

const START = `mutation($input: StartTaskInput!) { startTask(input: $input) { id status version } }`;
const GET = `query($id: ID!) { task(id: $id) { id status version progress result } }`;
const ANSWER = `mutation($id: ID!, $key: String!, $value: JSON!) { provideTaskInput(id: $id, key: $key, value: $value) { id status version } }`;
const FOLLOW = `subscription($id: ID!) { taskUpdated(id: $id) { id status version progress result } }`;

async function startTask(api: ServerProcess, kind: string, input: unknown): Promise<string> {
  const response = await gql(api, START, { input: { kind, input } });
  expect(response.errors).toBeUndefined();
  return response.data.startTask.id;
}

interface Followed {
  events: Array<{ status: string; version: number; progress: number | null; result: any }>;
  /** Resolves when the subscription completes (or errors). */
  done: Promise<{ error?: unknown }>;
}

/** Follows task `id` over its own WebSocket on `api`. */
function follow(api: ServerProcess, id: string): Followed {
  const client = createClient({
    url: api.wsUrl,
    webSocketImpl: WebSocket,
    retryAttempts: 0,
    connectionParams: { authorization: `Bearer ${alice}` },
  });
  clients.push(client);
  const events: Followed['events'] = [];
  const done = new Promise<{ error?: unknown }>((resolve) =>
    client.subscribe<{ taskUpdated: Followed['events'][number] }>(
      { query: FOLLOW, variables: { id } },
      {
        next: (value) => events.push(value.data!.taskUpdated),
        error: (error) => resolve({ error }),
        complete: () => resolve({}),
      },
    ),
  );
  return { events, done };
}

function expectIncreasing(versions: number[]): void {
  for (let i = 1; i < versions.length; i++) expect(versions[i]).toBeGreaterThan(versions[i - 1]!);
}

describe.skipIf(backend === 'pglite')('two api processes and a worker on one database', () => {
  beforeAll(async () => {
    database = await freshDatabase();
    admin = new pg.Client({ connectionString: database.url });
    admin.on('error', () => {}); // a failure shows in the query that meets it
    await admin.connect();
    alice = await readWriteToken();
    [api1, api2] = await Promise.all([
      startServer('api'),
      startServer('api'),
      startServer('worker', { RUNNER_CONCURRENCY: '2' }),
    ]);
  });

  afterAll(async () => {
    await Promise.all(clients.map((c) => c.dispose()));
    await Promise.all(servers.map((s) => s.stop('SIGTERM')));
    await admin?.end();
    await database?.drop();
  });

  it('follows live, over WebSocket on one api process, a task started on the other', async () => {
    const id = await startTask(api1, 'sleep', { ms: 600, steps: 3 });
    const followed = follow(api2, id);
    expect(await followed.done).toEqual({});
    const { events } = followed;
    expect(events[0]).toMatchObject({ status: 'WORKING' });
    expect(events.at(-1)).toMatchObject({ status: 'COMPLETED', progress: 1 });
    expect(events.at(-1)!.result.sleptMs).toBeGreaterThanOrEqual(600);
    expectIncreasing(events.map((e) => e.version));
    // Live: progress reported by the worker arrived before the end, not only the final state.
    expect(events.some((e) => e.status === 'WORKING' && (e.progress ?? 0) > 0)).toBe(true);
    expect((await gql(api1, GET, { id })).data.task.version).toBe(events.at(-1)!.version);
  });

  it('answers a poll on one api process with a change made through the other', async () => {
    const id = await startTask(api1, 'sleep', { ms: 3_600_000, steps: 1 });
    // Polled twice on api2: the second answer may come from its row cache.
    expect((await gql(api2, GET, { id })).data.task).toMatchObject({
      status: 'WORKING',
      version: 1,
    });
    expect((await gql(api2, GET, { id })).data.task).toMatchObject({
      status: 'WORKING',
      version: 1,
    });
    const cancelled = (await gql(api1, CANCEL, { id })).data.cancelTask;
    expect(cancelled.status).toBe('CANCELLED');
    const seen = await eventually(async () => {
      const task = (await gql(api2, GET, { id })).data.task;
      return task.status === 'CANCELLED' ? task : undefined;
    });
    expect(seen.version).toBe(cancelled.version);
    // Once seen, never older.
    for (let i = 0; i < 5; i++)
      expect((await gql(api2, GET, { id })).data.task.version).toBe(cancelled.version);
  });

  it('lets 500 subscribers across both api processes see one task complete, each in version order', async () => {
    const id = await startTask(api1, 'approval', { question: 'Ship it?' });
    await eventually(async () =>
      (await gql(api1, GET, { id })).data.task.status === 'INPUT_REQUIRED' ? true : undefined,
    );
    const followers = Array.from({ length: 500 }, (_, i) => follow(i % 2 === 0 ? api1 : api2, id));
    // Every subscriber holds the current state before the change happens.
    await eventually(
      async () => (followers.every((f) => f.events.length > 0) ? true : undefined),
      20_000,
    );
    expect(followers.every((f) => f.events[0]!.status === 'INPUT_REQUIRED')).toBe(true);

    const answered = await gql(api2, ANSWER, { id, key: 'decision', value: { approved: true } });
    expect(answered.errors).toBeUndefined();
    const outcomes = await Promise.all(followers.map((f) => f.done));
    expect(outcomes.filter((o) => o.error !== undefined)).toEqual([]);
    const final = (await gql(api1, GET, { id })).data.task;
    expect(final).toMatchObject({ status: 'COMPLETED', result: { approved: true } });
    for (const { events } of followers) {
      expectIncreasing(events.map((e) => e.version));
      expect(events.at(-1)).toMatchObject({
        status: 'COMPLETED',
        version: final.version,
        result: { approved: true },
      });
    }
  });

  it('recovers by itself when every database connection is cut mid-task: queued work runs, subscribers get the final state', async () => {
    // The worker runs two at a time: of four tasks, two are queued when the connections go.
    const ids = [];
    for (let i = 0; i < 4; i++) ids.push(await startTask(api1, 'sleep', { ms: 1_500, steps: 5 }));
    const followers = ids.map((id) => follow(api2, id));
    // Mid-task: the first task has reported progress.
    await eventually(async () =>
      followers[0]!.events.some((e) => (e.progress ?? 0) > 0) ? true : undefined,
    );
    const restoredBefore = servers.map(
      (s) => s.logs().filter((l) => l.msg === 'listening connection restored').length,
    );

    const cut = await admin.query<{ n: number }>(
      `select count(*)::int as n from (
         select pg_terminate_backend(pid) from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()
       ) t`,
    );
    // At least each process's listening connection, plus pool connections.
    expect(cut.rows[0]!.n).toBeGreaterThanOrEqual(3);

    // Every process notices and listens again, on its own.
    await eventually(async () =>
      servers.every(
        (s, i) =>
          s.logs().filter((l) => l.msg === 'listening connection restored').length >
          restoredBefore[i]!,
      )
        ? true
        : undefined,
    );
    const outcomes = await Promise.all(followers.map((f) => f.done));
    expect(outcomes.filter((o) => o.error !== undefined)).toEqual([]);
    for (const { events } of followers) {
      expectIncreasing(events.map((e) => e.version));
      expect(events.at(-1)).toMatchObject({
        status: 'COMPLETED',
        result: { sleptMs: expect.any(Number) },
      });
    }
    // Still serving: new work is accepted and run.
    const id = await startTask(api2, 'sleep', { ms: 0 });
    const after = follow(api1, id);
    expect(await after.done).toEqual({});
    expect(after.events.at(-1)).toMatchObject({ status: 'COMPLETED' });
    expect(servers.every((s) => s.child.exitCode === null)).toBe(true);
  });
});
