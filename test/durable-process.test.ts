import { readdirSync } from 'node:fs';
import { createClient } from 'graphql-ws';
import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import WebSocket from 'ws';
import { mintToken } from '../src/auth/mint.js';
import type { Database } from '../src/db/types.js';
import { READY_CHANNEL } from '../src/tasks/sql/common.js';
import { claimTasks } from '../src/tasks/sql/leases.js';
import { eventually, SECRET } from './helpers/app.js';
import { backend, freshDatabase, type TestDatabase } from './helpers/db.js';
import { CANCEL_TASK as CANCEL } from './helpers/operations.js';
import { gqlAt, type ServerProcess, spawnServer } from './helpers/process.js';

/**
 * Durable execution across real, separate server processes started as users start them
 * (`node --import tsx src/main.ts`), sharing one Postgres database. PGlite is in-process and
 * cannot be shared between processes, so this file runs on Postgres only.
 */

const SHORT_LEASE_MS = 1_500;

/** Every process this file started. */
const servers: ServerProcess[] = [];
let database: TestDatabase | undefined;
let client: pg.Client | undefined;
let api: ServerProcess;
let alice: string;
/** Servers that outlive one test (the API process, a describe block's workers). */
const kept = new Set<ServerProcess>();

async function kill(...which: ServerProcess[]): Promise<void> {
  await Promise.all(which.map((s) => s.stop('SIGKILL')));
}

/** Spawns `src/main.ts` in `role` (debug logs: claims and aborts) and resolves once it listens. */
async function startServer(
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

const START = `mutation($input: StartTaskInput!) { startTask(input: $input) { id status version } }`;
const ANSWER = `mutation($id: ID!, $key: String!, $value: JSON!) { provideTaskInput(id: $id, key: $key, value: $value) { id status version } }`;
const GET = `query($id: ID!) { task(id: $id) { id status version result error { code } inputRequest { key } } }`;

async function startTask(kind: string, input: unknown): Promise<string> {
  const response = await gqlAt(api.url, START, { input: { kind, input } }, alice);
  expect(response.errors).toBeUndefined();
  return response.data.startTask.id;
}

interface Row {
  id: string;
  status: string;
  worker_id: string | null;
  lease_expires_at: Date | null;
  attempt: number;
  progress: number | null;
  result: any;
  error: any;
}

async function row(id: string): Promise<Row> {
  const result = await client!.query<Row>(
    'select id, status, worker_id, lease_expires_at, attempt, progress, result, error from tasks where id = $1',
    [id],
  );
  return result.rows[0]!;
}

/** The server whose log says it claimed `taskId` on `attempt`. */
function claimant(
  candidates: ServerProcess[],
  taskId: string,
  attempt: number,
): ServerProcess | undefined {
  return candidates.find((s) =>
    s.logs().some((l) => l.msg === 'task claimed' && l.taskId === taskId && l.attempt === attempt),
  );
}

/** OS threads of a process: a worker thread (the primes sieve) adds at least one. */
const threads = (pid: number) => readdirSync(`/proc/${pid}/task`).length;

describe.skipIf(backend === 'pglite')('durable execution across processes', () => {
  const short = { TASK_LEASE_MS: String(SHORT_LEASE_MS) };

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

  describe('workers lost with SIGKILL', () => {
    let w1: ServerProcess;
    let w2: ServerProcess;
    let survivor: ServerProcess;
    beforeAll(async () => {
      [w1, w2] = await Promise.all([startServer('worker', short), startServer('worker', short)]);
      kept.add(w1).add(w2);
    });
    afterAll(() => kill(w1, w2));

    it('reclaims and completes the task of a worker killed with SIGKILL once its lease lapses', async () => {
      const runMs = 1_500;
      const id = await startTask('sleep', { ms: runMs, steps: 30 });
      // Mid-task: claimed, and reporting progress.
      const victim = await eventually(async () => claimant([w1, w2], id, 1));
      survivor = victim === w1 ? w2 : w1;
      await eventually(async () => ((await row(id)).progress ?? 0) > 0 || undefined);
      expect(await row(id)).toMatchObject({ status: 'working', attempt: 1 });

      const killedAt = Date.now();
      victim.child.kill('SIGKILL');
      let reclaimedAfter: number | undefined;
      const done = await eventually(
        async () => {
          const now = await row(id);
          if (reclaimedAfter === undefined && now.attempt === 2)
            reclaimedAfter = Date.now() - killedAt;
          return now.status === 'working' ? undefined : now;
        },
        20_000,
        10,
      );
      const completedAfter = Date.now() - killedAt;
      expect((await victim.exited).signal).toBe('SIGKILL');

      expect(done).toMatchObject({ status: 'completed', attempt: 2, worker_id: null, error: null });
      expect(done.result.sleptMs).toBeGreaterThanOrEqual(runMs);
      expect(claimant([survivor], id, 2)).toBe(survivor);
      expect(reclaimedAfter).toBeDefined();
      console.log(
        `[durable] TASK_LEASE_MS=${SHORT_LEASE_MS}: SIGKILL → reclaimed by the other worker in ${reclaimedAfter} ms, ` +
          `→ COMPLETED in ${completedAfter} ms (of which the re-run itself sleeps ${runMs} ms)`,
      );
      // The API process sees the same final state.
      expect((await gqlAt(api.url, GET, { id }, alice)).data.task).toMatchObject({
        status: 'COMPLETED',
        result: { sleptMs: done.result.sleptMs },
      });
    });

    it('keeps an answer given while no worker lives, and the next worker resumes with it at once', async () => {
      const id = await startTask('approval', { question: 'Ship it?' });
      await eventually(async () =>
        (await gqlAt(api.url, GET, { id }, alice)).data.task.status === 'INPUT_REQUIRED'
          ? true
          : undefined,
      );
      expect(claimant([survivor], id, 1)).toBe(survivor);

      await kill(survivor); // the last worker
      const answered = await gqlAt(
        api.url,
        ANSWER,
        { id, key: 'decision', value: { approved: true, comment: 'ship it' } },
        alice,
      );
      expect(answered.errors).toBeUndefined();
      expect(answered.data.provideTaskInput.status).toBe('WORKING');

      // Nobody runs it: the API process runs no tasks, even once the dead worker's lease has lapsed.
      await eventually(async () =>
        (await row(id)).lease_expires_at!.getTime() < Date.now() - SHORT_LEASE_MS
          ? true
          : undefined,
      );
      expect(await row(id)).toMatchObject({ status: 'working', attempt: 1, result: null });

      const ws = createClient({
        url: api.wsUrl,
        webSocketImpl: WebSocket,
        connectionParams: { authorization: `Bearer ${alice}` },
      });
      const events: any[] = [];
      const followed = new Promise<unknown>((resolve) =>
        ws.subscribe(
          {
            query: `subscription($id: ID!) { taskUpdated(id: $id) { status version result } }`,
            variables: { id },
          },
          {
            next: (value) => events.push(value.data),
            error: resolve,
            complete: () => resolve(undefined),
          },
        ),
      );
      await eventually(async () => (events.length > 0 ? true : undefined)); // subscribed: the current state came
      const w3 = await startServer('worker', short);
      const error = await followed;
      await ws.dispose();
      expect(error).toBeUndefined();
      const statuses = events.map((e) => e.taskUpdated.status);
      expect(statuses).not.toContain('INPUT_REQUIRED'); // the re-run did not ask again
      expect(events.at(-1).taskUpdated).toMatchObject({
        status: 'COMPLETED',
        result: { approved: true, comment: 'ship it' },
      });
      expect(claimant([w3], id, 2)).toBe(w3);
    });
  });

  describe('two workers on a short lease', () => {
    let w1: ServerProcess;
    let w2: ServerProcess;
    beforeAll(async () => {
      const env = { ...short, TASK_SHUTDOWN_GRACE_MS: '10000' };
      [w1, w2] = await Promise.all([startServer('worker', env), startServer('worker', env)]);
      kept.add(w1).add(w2);
    });
    afterAll(() => kill(w1, w2));

    it('aborts the handler of a worker paused past its lease, and its late writes change nothing', async () => {
      const id = await startTask('sleep', { ms: 4_000, steps: 40 });
      const paused = await eventually(async () => claimant([w1, w2], id, 1));
      const other = paused === w1 ? w2 : w1;
      await eventually(async () => ((await row(id)).progress ?? 0) > 0 || undefined);

      paused.child.kill('SIGSTOP');
      await eventually(async () => (claimant([other], id, 2) ? true : undefined), 15_000);
      paused.child.kill('SIGCONT');
      await eventually(async () =>
        paused
          .logs()
          .some((l) => l.msg === 'aborting handler' && l.taskId === id && l.cause === 'lease-lost')
          ? true
          : undefined,
      );
      const done = await eventually(async () => {
        const now = await row(id);
        return now.status === 'working' ? undefined : now;
      }, 15_000);
      expect(done).toMatchObject({ status: 'completed', attempt: 2 });
      expect(done.result.sleptMs).toBeGreaterThanOrEqual(4_000);
      expect(paused.logs().filter((l) => l.msg === 'task claimed' && l.taskId === id)).toHaveLength(
        1,
      );
    });

    it('keeps renewing the lease through the grace period of SIGTERM, so a draining task is not run twice', async () => {
      // Runs for twice the lease, all of it after SIGTERM.
      const id = await startTask('sleep', { ms: 2 * SHORT_LEASE_MS });
      const draining = await eventually(async () => claimant([w1, w2], id, 1));
      const other = draining === w1 ? w2 : w1;
      draining.child.kill('SIGTERM');
      expect(await draining.exited).toEqual({ code: 0, signal: null });
      expect(await row(id)).toMatchObject({ status: 'completed', attempt: 1, worker_id: null });
      expect(claimant([other], id, 2)).toBeUndefined();
    });
  });

  it('drains on SIGTERM: finishes what it can within the grace period, releases the rest uncounted, exits 0', async () => {
    // A long lease: whatever is claimable right after the exit was released, not lapsed.
    const w1 = await startServer('worker', {
      TASK_LEASE_MS: '30000',
      TASK_SHUTDOWN_GRACE_MS: '2000',
    });
    const long = await startTask('sleep', { ms: 3_600_000 });
    const waiting = await startTask('approval', { question: 'Deploy?' });
    await eventually(async () =>
      (await row(long)).worker_id && (await row(waiting)).status === 'input_required'
        ? true
        : undefined,
    );
    const quick = await startTask('sleep', { ms: 800 });
    await eventually(async () => ((await row(quick)).worker_id ? true : undefined));

    w1.child.kill('SIGTERM');
    expect(await w1.exited).toEqual({ code: 0, signal: null });

    expect(await row(quick)).toMatchObject({ status: 'completed', worker_id: null });
    // Given back without counting the attempt; the waiting task stays waiting, unleased.
    expect(await row(long)).toMatchObject({
      status: 'working',
      worker_id: null,
      lease_expires_at: null,
      attempt: 0,
    });
    expect(await row(waiting)).toMatchObject({
      status: 'input_required',
      worker_id: null,
      lease_expires_at: null,
      attempt: 0,
    });
    const leased = await client!.query(
      `select count(*)::int as n from tasks where worker_id is not null and status in ('working', 'input_required')`,
    );
    expect(leased.rows[0].n).toBe(0);
    expect(w1.logs().find((l) => l.msg === 'runner stopped')).toMatchObject({
      aborted: 2,
      released: 2,
    });

    // Any worker can take the released task at once (a 30 s lease would still be live had it
    // lapsed rather than been released): claim it the way a worker does.
    const db = new Kysely<Database>({
      dialect: new PostgresDialect({
        pool: new pg.Pool({ connectionString: database!.url, max: 1 }),
      }),
    });
    try {
      const claimed = await claimTasks(db, 'probe', ['sleep'], 10, 30_000);
      expect(claimed.map((r) => [r.id, r.attempt])).toEqual([[long, 1]]);
    } finally {
      await db.destroy();
    }
  });

  it('aborts a handler in a worker process when an API process cancels it, and the freed slot runs the next task', async () => {
    const worker = await startServer('worker', { RUNNER_CONCURRENCY: '1' });

    // An hour-long sleep holds the only slot; the primes task queues behind it.
    const hour = await startTask('sleep', { ms: 3_600_000 });
    await eventually(async () => ((await row(hour)).worker_id ? true : undefined));
    const idleThreads = threads(worker.child.pid!);
    const sieve = await startTask('primes', { limit: 1_000_000_000 });
    expect((await row(sieve)).attempt).toBe(0);

    const cancelledAt = Date.now();
    expect((await gqlAt(api.url, CANCEL, { id: hour }, alice)).data.cancelTask.status).toBe(
      'CANCELLED',
    );
    await eventually(async () => ((await row(sieve)).worker_id ? true : undefined));
    console.log(
      `[durable] cancel answered by the API process → the worker's freed slot claimed the next task in ${Date.now() - cancelledAt} ms`,
    );

    // The sieve runs in a worker thread; a cancel from the API process stops that thread.
    await eventually(async () => ((await row(sieve)).progress ?? 0) > 0 || undefined);
    expect(threads(worker.child.pid!)).toBeGreaterThan(idleThreads);
    const next = await startTask('sleep', { ms: 0 });
    expect((await gqlAt(api.url, CANCEL, { id: sieve }, alice)).data.cancelTask.status).toBe(
      'CANCELLED',
    );
    await eventually(
      async () => ((await row(next)).status === 'completed' ? true : undefined),
      15_000,
    );
    await eventually(async () => (threads(worker.child.pid!) <= idleThreads ? true : undefined));

    for (const id of [hour, sieve])
      expect(await row(id)).toMatchObject({ status: 'cancelled', result: null });
  });

  it('serves /healthz and /readyz on every role; api runs no tasks, worker serves no GraphQL or REST', async () => {
    // The news a runner wakes on to claim: once it is out, a runner in the API process would
    // be claiming, while the processes that may run the task have yet to start.
    const ready = new pg.Client({ connectionString: database!.url });
    onTestFinished(() => ready.end());
    await ready.connect();
    await ready.query(`listen ${READY_CHANNEL}`);
    const woken = new Promise<void>((resolve) =>
      ready.on('notification', (n) => n.payload === 'sleep' && resolve()),
    );
    const id = await startTask('sleep', { ms: 0 });
    await woken;
    expect(await row(id)).toMatchObject({ status: 'working', attempt: 0, worker_id: null });

    const [worker, all] = await Promise.all([startServer('worker'), startServer('all')]);
    await eventually(async () => ((await row(id)).status === 'completed' ? true : undefined));
    // Its one claim was theirs: the API process, first to hear of the task, never took it.
    expect(claimant([worker, all], id, 1)).toBeDefined();

    for (const server of [api, worker, all]) {
      for (const path of ['/healthz', '/readyz']) {
        const response = await fetch(`${server.url}${path}`);
        expect(response.status, `${server.role} ${path}`).toBe(200);
      }
    }
    for (const server of [api, all]) {
      expect((await gqlAt(server.url, GET, { id }, alice)).data.task.status).toBe('COMPLETED');
      const rest = await fetch(`${server.url}/v1/jobs/${id}`, {
        headers: { authorization: `Bearer ${alice}` },
      });
      expect(rest.status).toBe(200);
    }
    const graphql = await fetch(`${worker.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${alice}` },
      body: JSON.stringify({ query: '{ __typename }' }),
    });
    expect(graphql.status).toBe(404);
    const rest = await fetch(`${worker.url}/v1/jobs/${id}`, {
      headers: { authorization: `Bearer ${alice}` },
    });
    expect(rest.status).toBe(404);
    expect(api.logs().some((l) => l.msg === 'task claimed')).toBe(false);
  });
});
