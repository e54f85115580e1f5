import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_RETRY } from '../../../src/tasks/retry.js';
import type { TaskAbortedError } from '../../../src/tasks/runner/runner.js';
import { cancelTask } from '../../../src/tasks/sql/cancel.js';
import { claimTasks } from '../../../src/tasks/sql/claim.js';
import { findStoredTask } from '../../../src/tasks/sql/find.js';
import { insertTask } from '../../../src/tasks/sql/insert.js';
import {
  completeTask,
  failLostTasks,
  failTask,
  type Lease,
  markInputRequired,
  releaseLeases,
  renewLeases,
  reportProgress,
} from '../../../src/tasks/sql/leases.js';
import { eventually } from '../../helpers/app.js';
import {
  ANSWER_TASK as ANSWER,
  CANCEL_TASK as CANCEL,
  GET_TASK as GET,
  START_TASK as START,
} from '../../helpers/operations.js';
import { abortReasons, codeOf, gate, t, useRunnerApp } from '../../helpers/runner-kinds.js';

/**
 * The runner inside one process, on both backends: writes fenced by the lease, timeouts,
 * failures, and the human-in-the-loop path (DESIGN §4 "Human in the loop", "Execution").
 */

useRunnerApp();

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
        await markInputRequired(db, id, lease, [{ key: 'k', message: 'stale' }]),
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
