import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import type { ServiceError } from '../src/errors.js';
import { defineTaskKind, TaskFailedError } from '../src/tasks/kinds.js';
import { DEFAULT_RETRY } from '../src/tasks/retry.js';
import type { TaskAbortedError } from '../src/tasks/runner/runner.js';
import { cancelTask } from '../src/tasks/sql/cancel.js';
import { findStoredTask } from '../src/tasks/sql/find.js';
import { insertTask } from '../src/tasks/sql/insert.js';
import {
  claimTasks,
  completeTask,
  failLostTasks,
  failTask,
  type Lease,
  markInputRequired,
  releaseLeases,
  renewLeases,
  reportProgress,
} from '../src/tasks/sql/leases.js';
import type { Task } from '../src/tasks/task.js';
import { eventually, startTestApp, type TestApp } from './helpers/app.js';
import { backend } from './helpers/db.js';
import { untilAborted } from './helpers/kinds.js';
import {
  ANSWER_TASK as ANSWER,
  CANCEL_TASK as CANCEL,
  GET_TASK as GET,
  START_TASK as START,
} from './helpers/operations.js';

/**
 * The runner's guarantees inside one process, on both backends: one terminal state per task
 * whatever races it, writes fenced by the lease, timeouts, failures, and the human-in-the-loop
 * path (DESIGN §4 "Human in the loop", "Execution").
 */

/** Handlers of the kind `racer` wait here until the test releases them. */
interface Gate {
  reached: Promise<void>;
  arrive(): void;
  released: Promise<void>;
  release(): void;
}
const gates = new Map<string, Gate>();
function gate(id: string): Gate {
  let entry = gates.get(id);
  if (!entry) {
    let arrive!: () => void;
    let release!: () => void;
    const reached = new Promise<void>((r) => (arrive = r));
    const released = new Promise<void>((r) => (release = r));
    entry = { reached, arrive, released, release };
    gates.set(id, entry);
  }
  return entry;
}

/** Completes when released, paying no attention to its signal: only the store can stop its result. */
const racer = defineTaskKind<Record<string, never>, { finished: true }>({
  name: 'racer',
  description: 'test: completes when the test releases it',
  inputSchema: { type: 'object' },
  async run({ taskId }) {
    const g = gate(taskId);
    g.arrive();
    await g.released;
    return { finished: true };
  },
});

/** Returns its input's `text` when released: a result the store may refuse (a NUL character). */
const echo = defineTaskKind<{ text: string; nul?: boolean }, { text: string }>({
  name: 'echo',
  description:
    'test: returns its text (with a NUL character after it, if asked) when the test releases it',
  inputSchema: {
    type: 'object',
    properties: { text: { type: 'string' }, nul: { type: 'boolean' } },
    required: ['text'],
  },
  async run({ taskId, input }) {
    const g = gate(taskId);
    g.arrive();
    await g.released;
    return { text: input.nul ? `${input.text}\u0000` : input.text };
  },
});

/** Returns what JSON cannot say. */
const bigint = defineTaskKind<Record<string, never>, { n: bigint }>({
  name: 'bigint',
  description: 'test: returns a BigInt',
  inputSchema: { type: 'object' },
  run: async () => ({ n: 10n }),
});

const abortReasons = new Map<string, unknown>();
const waitForAbort = (taskId: string, signal: AbortSignal) =>
  untilAborted(signal, (reason) => abortReasons.set(taskId, reason));

const slow = defineTaskKind<Record<string, never>, never>({
  name: 'slow',
  description: 'test: runs until aborted; times out after 200 ms',
  inputSchema: { type: 'object' },
  timeoutMs: 200,
  run: ({ taskId, signal }) => waitForAbort(taskId, signal),
});

const hang = defineTaskKind<Record<string, never>, never>({
  name: 'hang',
  description: 'test: runs until aborted',
  inputSchema: { type: 'object' },
  run: ({ taskId, signal }) => waitForAbort(taskId, signal),
});

const thrower = defineTaskKind<{ coded: boolean }, never>({
  name: 'thrower',
  description: 'test: throws',
  inputSchema: { type: 'object', properties: { coded: { type: 'boolean' } }, required: ['coded'] },
  async run({ input }) {
    if (input.coded) throw new TaskFailedError('QUOTA_EXCEEDED', 'Over quota.');
    throw new Error('boom');
  },
});

/** Asks once, with a short poll interval and a timeout shorter than the wait for the answer. */
const asker = defineTaskKind<Record<string, never>, { said: unknown }>({
  name: 'asker',
  description: 'test: asks for `word`',
  inputSchema: { type: 'object' },
  pollIntervalMs: 20,
  timeoutMs: 300,
  async run({ requestInput }) {
    const said = await requestInput({
      key: 'word',
      message: 'Say a word',
      schema: { type: 'string' },
    });
    return { said };
  },
});

/** Hangs on its first attempt; completes on any later one. */
const secondTime = defineTaskKind<Record<string, never>, { attempt: number }>({
  name: 'second-time',
  description: 'test: completes on its second attempt',
  inputSchema: { type: 'object' },
  async run({ taskId, attempt, signal }) {
    if (attempt === 1) await waitForAbort(taskId, signal);
    return { attempt };
  },
});

const kinds = [racer, echo, bigint, slow, hang, thrower, asker, secondTime];

const codeOf = (response: { errors?: Array<{ extensions?: { code?: string } }> }) =>
  response.errors?.[0]?.extensions?.code;

// One app for most of this file: all 50 racers run at once; heartbeats every 500 ms.
let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ kinds, env: { RUNNER_CONCURRENCY: '64', TASK_LEASE_MS: '1500' } });
});
afterAll(() => t?.stop());

describe('one terminal state per task', () => {
  it('keeps the first terminal state when 50 cancels race 50 completions, and never changes it afterwards', async () => {
    const alice = await t.token('alice');
    const ws = t.ws(alice);
    const ids: string[] = [];
    const streams: Array<Promise<{ events: any[]; error?: unknown }>> = [];
    for (let i = 0; i < 50; i++) {
      const started = await t.gql(START, { input: { kind: 'racer' } }, alice);
      const id: string = started.data.startTask.id;
      ids.push(id);
      streams.push(
        new Promise((resolve) => {
          const events: any[] = [];
          ws.subscribe(
            {
              query: `subscription($id: ID!) { taskUpdated(id: $id) { status version result } }`,
              variables: { id },
            },
            {
              next: (v) => events.push(v.data),
              error: (error) => resolve({ events, error }),
              complete: () => resolve({ events }),
            },
          );
        }),
      );
    }

    // Each handler is about to return when its cancel is sent (straight to the service, so no
    // HTTP parsing gives the completion a head start), the one a few event-loop turns after the
    // other, in either order: the two writes race in the store.
    const actor = { id: 'alice', admin: false };
    const turns = (n: number) =>
      new Promise<void>((resolve) => {
        const hop = (left: number) => (left === 0 ? resolve() : setImmediate(() => hop(left - 1)));
        hop(n);
      });
    const cancels: Array<{ task?: Task; code?: string }> = [];
    for (const [i, id] of ids.entries()) {
      await gate(id).reached;
      const releaseFirst = i % 2 === 0;
      const cancel = () =>
        t.app.tasks.cancel(actor, id).then(
          (task) => ({ task }),
          (err: ServiceError) => ({ code: err.code }),
        );
      let cancelled: Promise<{ task?: Task; code?: string }>;
      if (releaseFirst) {
        gate(id).release();
        await turns(i % 8);
        cancelled = cancel();
      } else {
        cancelled = cancel();
        await turns(i % 8);
        gate(id).release();
      }
      cancels.push(await cancelled);
    }
    const finals = await Promise.all(streams);
    await eventually(async () => (t.app.runner!.held === 0 ? true : undefined));

    let cancelled = 0;
    for (const [i, id] of ids.entries()) {
      const cancel = cancels[i]!;
      const { events, error } = finals[i]!;
      expect(error).toBeUndefined();
      const versions = events.map((e) => e.taskUpdated.version);
      expect(versions).toEqual([...new Set(versions)].sort((a, b) => a - b));
      const terminal = events.filter((e) =>
        ['COMPLETED', 'CANCELLED', 'FAILED'].includes(e.taskUpdated.status),
      );
      expect(terminal).toHaveLength(1);
      const last = events.at(-1).taskUpdated;
      expect(terminal[0].taskUpdated).toBe(last);
      if (cancel.task) {
        cancelled++;
        expect(cancel.task.status).toBe('cancelled');
        expect(last).toMatchObject({
          status: 'CANCELLED',
          result: null,
          version: cancel.task.version,
        });
      } else {
        // The completion won: cancel says so, and the task stays completed.
        expect(cancel.code).toBe('TASK_TERMINAL');
        expect(last).toMatchObject({ status: 'COMPLETED', result: { finished: true } });
      }
      // Every handler has returned and written what it could: nothing moved.
      const now = (await t.gql(GET, { id }, alice)).data.task;
      expect({ status: now.status, version: now.version }).toEqual({
        status: last.status,
        version: last.version,
      });
    }
    console.log(
      `[durable] 50 cancel/completion races: ${cancelled} cancelled, ${50 - cancelled} completed`,
    );
    // Both sides won some races, or this test raced nothing.
    expect(cancelled).toBeGreaterThan(0);
    expect(cancelled).toBeLessThan(50);
  });
});

describe('the runner', () => {
  let alice: string;
  let bob: string;
  beforeAll(async () => {
    [alice, bob] = await Promise.all([t.token('alice'), t.token('bob')]);
  });

  async function start(kind: string, input: unknown = {}): Promise<any> {
    const started = await t.gql(START, { input: { kind, input } }, alice);
    expect(started.errors).toBeUndefined();
    return started.data.startTask;
  }

  async function until(id: string, statuses: string[]): Promise<any> {
    return eventually(async () => {
      const task = (await t.gql(GET, { id }, alice)).data.task;
      return statuses.includes(task.status) ? task : undefined;
    });
  }

  /**
   * Stores a task of alice's of the kind `ghost`, which no runner here knows, so only the test
   * that stored it claims it (through the lease functions). Returns its id.
   */
  async function insertGhost(maxAttempts = 3): Promise<string> {
    const id = randomUUID();
    await insertTask(t.app.db.kysely, {
      id,
      owner: 'alice',
      kind: 'ghost',
      input: {},
      ttlMs: 60_000,
      pollIntervalMs: 1_000,
      timeoutMs: 60_000,
      idempotencyKey: null,
      runAt: null,
      priority: 0,
      concurrencyKey: null,
      concurrencyLimit: null,
      retry: { ...DEFAULT_RETRY, maxAttempts },
    });
    return id;
  }

  it('changes nothing when a stale worker writes after its lease moved to a new attempt', async () => {
    const db = t.app.db.kysely;
    const id = await insertGhost();
    const [first] = await claimTasks(db, 'w1', ['ghost'], 1, 50);
    expect(first).toMatchObject({ id, worker_id: 'w1', attempt: 1 });
    // The lease lapses; another worker claims the task.
    const [second] = await eventually(async () => {
      const rows = await claimTasks(db, 'w2', ['ghost'], 1, 60_000);
      return rows.length ? rows : undefined;
    });
    expect(second).toMatchObject({ id, worker_id: 'w2', attempt: 2 });

    const stale: Lease[] = [
      { workerId: 'w1', attempt: 1 }, // the lost worker
      { workerId: 'w2', attempt: 1 }, // the right worker, an old attempt
      { workerId: 'w1', attempt: 2 }, // the current attempt, the wrong worker
    ];
    for (const lease of stale) {
      expect(await reportProgress(db, id, lease, 0.9, 'stale')).toBeUndefined();
      expect(
        await markInputRequired(db, id, lease, { key: 'k', message: 'stale' }),
      ).toBeUndefined();
      expect(await completeTask(db, id, lease, { stale: true })).toBeUndefined();
      expect(await failTask(db, id, lease, { code: 'STALE', message: 'stale' })).toBeUndefined();
      expect(
        await renewLeases(db, lease.workerId, [{ id, attempt: lease.attempt }], 60_000),
      ).toEqual(new Map());
      expect(await releaseLeases(db, lease.workerId, [{ id, attempt: lease.attempt }])).toBe(0);
    }
    const after = (await findStoredTask(db, id))!;
    expect(after).toEqual(second);

    const current: Lease = { workerId: 'w2', attempt: 2 };
    expect(await reportProgress(db, id, current, 0.5, 'halfway')).toMatchObject({
      progress: 0.5,
      version: second!.version + 1,
    });
    expect(await completeTask(db, id, current, { ok: true })).toMatchObject({
      status: 'completed',
      result: { ok: true },
      worker_id: null,
    });
    // Final: neither the holder's late failure nor a cancel changes it.
    expect(await failTask(db, id, current, { code: 'LATE', message: 'late' })).toBeUndefined();
    expect(await cancelTask(db, id, 'alice')).toBeUndefined();
    expect(await findStoredTask(db, id)).toMatchObject({
      status: 'completed',
      result: { ok: true },
    });
  });

  it('does not let the lease holder complete a task that was cancelled', async () => {
    const db = t.app.db.kysely;
    const id = await insertGhost();
    const [claimed] = await claimTasks(db, 'w1', ['ghost'], 1, 60_000);
    const lease: Lease = { workerId: 'w1', attempt: claimed!.attempt };
    expect(await cancelTask(db, id, 'alice')).toMatchObject({ status: 'cancelled' });
    expect(await completeTask(db, id, lease, { late: true })).toBeUndefined();
    expect(await reportProgress(db, id, lease, 1, 'late')).toBeUndefined();
    expect(await renewLeases(db, 'w1', [{ id, attempt: lease.attempt }], 60_000)).toEqual(
      new Map(),
    );
    expect(await findStoredTask(db, id)).toMatchObject({ status: 'cancelled', result: null });
  });

  it('fails a task with WORKER_LOST once its last allowed attempt lost its worker', async () => {
    const db = t.app.db.kysely;
    const id = await insertGhost(2);
    expect(await claimTasks(db, 'w1', ['ghost'], 1, 20)).toHaveLength(1);
    await eventually(async () =>
      (await claimTasks(db, 'w2', ['ghost'], 1, 20)).length ? true : undefined,
    );
    const lost = await eventually(async () => {
      await failLostTasks(db); // also the app's backstop's job
      const row = (await findStoredTask(db, id))!;
      return row.status === 'failed' ? row : undefined;
    });
    expect(lost).toMatchObject({ attempt: 2, worker_id: null, error: { code: 'WORKER_LOST' } });
    expect(await claimTasks(db, 'w3', ['ghost'], 1, 20)).toHaveLength(0);
  });

  it('fails a task that runs past its kind’s timeoutMs with TIMEOUT, aborting its handler', async () => {
    const task = await start('slow');
    const failed = await until(task.id, ['FAILED', 'COMPLETED', 'CANCELLED']);
    expect(failed).toMatchObject({ status: 'FAILED', error: { code: 'TIMEOUT' } });
    expect((abortReasons.get(task.id) as TaskAbortedError).cause).toBe('timeout');
  });

  it('fails a task whose handler throws with HANDLER_ERROR, or with the code of a TaskFailedError', async () => {
    const plain = await start('thrower', { coded: false });
    const coded = await start('thrower', { coded: true });
    expect(await until(plain.id, ['FAILED', 'COMPLETED'])).toMatchObject({
      status: 'FAILED',
      error: { code: 'HANDLER_ERROR', message: 'boom' },
    });
    expect(await until(coded.id, ['FAILED', 'COMPLETED'])).toMatchObject({
      status: 'FAILED',
      error: { code: 'QUOTA_EXCEEDED', message: 'Over quota.' },
    });
  });

  it('fails a task whose result cannot be stored with HANDLER_ERROR at once, and completes the others written with it', async () => {
    const texts = ['one', 'two', 'nul', 'three', 'four', 'five'];
    const ids: string[] = [];
    for (const text of texts) ids.push((await start('echo', { text, nul: text === 'nul' })).id);
    await Promise.all(ids.map((id) => gate(id).reached));
    for (const id of ids) gate(id).release(); // completions arrive together: one batch
    const unstorable = (await start('bigint')).id;

    for (const [i, id] of ids.entries()) {
      const done = await until(id, ['COMPLETED', 'FAILED']);
      const row = (await findStoredTask(t.app.db.kysely, id))!;
      expect(row.attempt).toBe(1); // never re-run
      if (texts[i] === 'nul')
        expect(done).toMatchObject({ status: 'FAILED', error: { code: 'HANDLER_ERROR' } });
      else expect(done).toMatchObject({ status: 'COMPLETED', result: { text: texts[i] } });
    }
    const failed = await until(unstorable, ['COMPLETED', 'FAILED']);
    expect(failed).toMatchObject({ status: 'FAILED', error: { code: 'HANDLER_ERROR' } });
    expect(failed.error.message).toMatch(/BigInt/);
    expect((await findStoredTask(t.app.db.kysely, unstorable))!.attempt).toBe(1);
  });

  it('runs the approval kind end to end: INPUT_REQUIRED, answers checked, then COMPLETED with the decision', async () => {
    const task = await start('approval', { question: 'Ship v2?' });
    const waiting = await until(task.id, ['INPUT_REQUIRED']);
    expect(waiting.inputRequest).toMatchObject({
      key: 'decision',
      message: 'Ship v2?',
      schema: { required: ['approved'] },
    });

    const invalid = await t.gql(
      ANSWER,
      { id: task.id, key: 'decision', value: { approved: 'yes' } },
      alice,
    );
    expect(codeOf(invalid)).toBe('BAD_USER_INPUT');
    const wrongKey = await t.gql(
      ANSWER,
      { id: task.id, key: 'verdict', value: { approved: true } },
      alice,
    );
    expect(codeOf(wrongKey)).toBe('NOT_AWAITING_INPUT');
    // jsonb cannot store U+0000: refused as bad input, not failed as an internal error.
    const nul = await t.gql(
      ANSWER,
      { id: task.id, key: 'decision', value: { approved: true, comment: 'a\u0000b' } },
      alice,
    );
    expect(codeOf(nul)).toBe('BAD_USER_INPUT');
    expect(
      codeOf(
        await t.gql(START, { input: { kind: 'approval', input: { question: 'a\u0000b' } } }, alice),
      ),
    ).toBe('BAD_USER_INPUT');
    const notTheirs = await t.gql(
      ANSWER,
      { id: task.id, key: 'decision', value: { approved: false } },
      bob,
    );
    expect(codeOf(notTheirs)).toBe('NOT_FOUND');
    expect((await t.gql(GET, { id: task.id }, alice)).data.task.status).toBe('INPUT_REQUIRED');

    const answered = await t.gql(
      ANSWER,
      { id: task.id, key: 'decision', value: { approved: true, comment: 'go' } },
      alice,
    );
    expect(answered.errors).toBeUndefined();
    expect(answered.data.provideTaskInput).toMatchObject({ status: 'WORKING', inputRequest: null });
    expect(await until(task.id, ['COMPLETED', 'FAILED'])).toMatchObject({
      status: 'COMPLETED',
      result: { approved: true, comment: 'go' },
    });

    const again = await t.gql(
      ANSWER,
      { id: task.id, key: 'decision', value: { approved: false } },
      alice,
    );
    expect(codeOf(again)).toBe('TASK_TERMINAL');
  });

  it('refuses answers to a task that is not waiting (NOT_AWAITING_INPUT) or was cancelled (TASK_TERMINAL)', async () => {
    const working = await start('sleep', { ms: 60_000 });
    const notWaiting = await t.gql(
      ANSWER,
      { id: working.id, key: 'decision', value: { approved: true } },
      alice,
    );
    expect(codeOf(notWaiting)).toBe('NOT_AWAITING_INPUT');

    const task = await start('approval', { question: 'Cancel me?' });
    await until(task.id, ['INPUT_REQUIRED']);
    expect((await t.gql(CANCEL, { id: task.id }, alice)).data.cancelTask.status).toBe('CANCELLED');
    const late = await t.gql(
      ANSWER,
      { id: task.id, key: 'decision', value: { approved: true } },
      alice,
    );
    expect(codeOf(late)).toBe('TASK_TERMINAL');
    await t.gql(CANCEL, { id: working.id }, alice);
  });

  it('grows pollIntervalMs while a task waits for a person, and does not count the wait against timeoutMs', async () => {
    const task = await start('asker');
    expect(task.pollIntervalMs).toBe(20);
    const waiting = await until(task.id, ['INPUT_REQUIRED']);
    expect(waiting.pollIntervalMs).toBeGreaterThanOrEqual(100);
    const longer = await eventually(async () => {
      const now = (await t.gql(GET, { id: task.id }, alice)).data.task;
      return now.pollIntervalMs > waiting.pollIntervalMs ? now : undefined;
    });
    expect(longer.status).toBe('INPUT_REQUIRED');
    // By now the task has waited far longer than its 300 ms timeout: waiting does not count.
    expect(Date.now() - Date.parse(waiting.lastUpdatedAt)).toBeGreaterThan(300);
    await t.gql(ANSWER, { id: task.id, key: 'word', value: 'hello' }, alice);
    const done = await until(task.id, ['COMPLETED', 'FAILED']);
    expect(done).toMatchObject({
      status: 'COMPLETED',
      result: { said: 'hello' },
      pollIntervalMs: 20,
    });
  });
});

describe('without a notification', () => {
  it('resumes a waiting handler at its next heartbeat when the answer’s notification was lost', async () => {
    const alice = await t.token('alice');
    const id = (await t.gql(START, { input: { kind: 'asker' } }, alice)).data.startTask.id;
    await eventually(async () =>
      (await t.gql(GET, { id }, alice)).data.task.status === 'INPUT_REQUIRED' ? true : undefined,
    );
    // What provideTaskInput stores, minus its pg_notify.
    await sql`update tasks set status = 'working', version = version + 1, input_request = null,
      answers = answers || '{"word": "unheard"}'::jsonb where id = ${id}::uuid`.execute(
      t.app.db.kysely,
    );
    // Read the row itself: a read cache fed by notifications would not know of the answer either.
    const done = await eventually(async () => {
      const row = (await findStoredTask(t.app.db.kysely, id))!;
      return row.status === 'working' ? undefined : row;
    });
    expect(done).toMatchObject({ status: 'completed', result: { said: 'unheard' } });
  });

  it('aborts a handler at its next heartbeat when the cancel’s notification was lost', async () => {
    const alice = await t.token('alice');
    const heldBefore = t.app.runner!.held;
    const id = (await t.gql(START, { input: { kind: 'hang' } }, alice)).data.startTask.id;
    await eventually(async () =>
      (await findStoredTask(t.app.db.kysely, id))?.worker_id ? true : undefined,
    );
    await sql`update tasks set status = 'cancelled', version = version + 1 where id = ${id}::uuid`.execute(
      t.app.db.kysely,
    );
    await eventually(async () => (abortReasons.has(id) ? true : undefined));
    expect((abortReasons.get(id) as TaskAbortedError).cause).toBe('lease-lost');
    await eventually(async () => (t.app.runner!.held === heldBefore ? true : undefined));
    expect(await findStoredTask(t.app.db.kysely, id)).toMatchObject({
      status: 'cancelled',
      result: null,
    });
  });
});

// Needs a Postgres server to refuse this app's connections; PGlite is in-process.
describe.skipIf(backend === 'pglite')('a worker that loses its database', () => {
  it('aborts its handler once its lease may have lapsed, and runs the task again when the database is back', async () => {
    const t = await startTestApp({ kinds, env: { TASK_LEASE_MS: '1000' } });
    onTestFinished(() => t.stop());
    const alice = await t.token('alice');
    const id = (await t.gql(START, { input: { kind: 'second-time' } }, alice)).data.startTask.id;
    await eventually(async () =>
      (await findStoredTask(t.app.db.kysely, id))?.worker_id ? true : undefined,
    );

    const name = new URL(t.database.url!).pathname.slice(1);
    const admin = new pg.Client({ connectionString: process.env.DATABASE_URL });
    await admin.connect();
    try {
      await admin.query(`alter database ${name} allow_connections false`);
      await admin.query(
        `select pg_terminate_backend(pid) from pg_stat_activity where datname = $1`,
        [name],
      );
      await eventually(async () => (abortReasons.has(id) ? true : undefined));
      expect((abortReasons.get(id) as TaskAbortedError).cause).toBe('lease-lost');
    } finally {
      await admin.query(`alter database ${name} allow_connections true`);
      await admin.end();
    }
    const done = await eventually(async () => {
      const row = await findStoredTask(t.app.db.kysely, id).catch(() => undefined);
      return row?.status === 'completed' ? row : undefined;
    }, 20_000);
    expect(done).toMatchObject({ attempt: 2, result: { attempt: 2 } });
  });
});

describe('runner slots', () => {
  it('does not give a task waiting for a person a runner slot: with one slot, other work still runs', async () => {
    const t = await startTestApp({ env: { RUNNER_CONCURRENCY: '1' } });
    onTestFinished(() => t.stop());
    const alice = await t.token('alice');
    const get = async (id: string) => (await t.gql(GET, { id }, alice)).data.task;
    const approval = (
      await t.gql(START, { input: { kind: 'approval', input: { question: 'Wait?' } } }, alice)
    ).data.startTask;
    await eventually(async () =>
      (await get(approval.id)).status === 'INPUT_REQUIRED' ? true : undefined,
    );
    const sleeper = (await t.gql(START, { input: { kind: 'sleep', input: { ms: 10 } } }, alice))
      .data.startTask;
    await eventually(async () =>
      (await get(sleeper.id)).status === 'COMPLETED' ? true : undefined,
    );
    // Still held in memory (its lease renewed), only not counted against the slot.
    expect(t.app.runner!.held).toBe(1);
    expect((await get(approval.id)).status).toBe('INPUT_REQUIRED');

    await t.gql(ANSWER, { id: approval.id, key: 'decision', value: { approved: false } }, alice);
    await eventually(async () =>
      (await get(approval.id)).status === 'COMPLETED' ? true : undefined,
    );
    expect((await get(approval.id)).result).toEqual({ approved: false, comment: null });
  });
});
