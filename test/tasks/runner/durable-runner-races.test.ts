import { sql } from 'kysely';
import pg from 'pg';
import { describe, expect, it, onTestFinished } from 'vitest';
import type { ServiceError } from '../../../src/errors.js';
import type { TaskAbortedError } from '../../../src/tasks/runner/runner.js';
import { findStoredTask } from '../../../src/tasks/sql/find.js';
import type { Task } from '../../../src/tasks/task.js';
import { eventually, startTestApp } from '../../helpers/app.js';
import { backend } from '../../helpers/db.js';
import {
  ANSWER_TASK as ANSWER,
  GET_TASK as GET,
  START_TASK as START,
} from '../../helpers/operations.js';
import { abortReasons, gate, kinds, t, useRunnerApp } from '../../helpers/runner-kinds.js';

/**
 * The runner's guarantees inside one process, on both backends: one terminal state per task
 * whatever races it, work found without a notification, a worker that loses its database, and
 * runner slots (DESIGN §4 "Execution").
 */

useRunnerApp();

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
    // The renewal that misses the task asks why: a cancel is told as one.
    expect((abortReasons.get(id) as TaskAbortedError).cause).toBe('cancelled');
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
