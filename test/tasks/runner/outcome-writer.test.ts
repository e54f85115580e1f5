import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TaskRow } from '../../../src/db/types.js';
import { defineTaskKind } from '../../../src/tasks/kinds.js';
import { OutcomeWriter } from '../../../src/tasks/runner/outcome-writer.js';
import { claimTasks } from '../../../src/tasks/sql/claim.js';
import { findStoredTask } from '../../../src/tasks/sql/find.js';
import { insertTask } from '../../../src/tasks/sql/insert.js';
import { eventually, startTestApp, type TestApp } from '../../helpers/app.js';

/** Completions written together: one statement, each row fenced by its own lease, one NOTIFY each. */

// A kind no runner of this app claims: the test claims it itself.
const manual = defineTaskKind({
  name: 'manual',
  description: 'claimed by the test',
  inputSchema: { type: 'object' },
  run: async () => null,
});

let t: TestApp;
let alice: string;
beforeAll(async () => {
  t = await startTestApp({ env: { ROLE: 'api' }, kinds: [manual] });
  alice = await t.token('alice');
});
afterAll(() => t?.stop());

/** A task stored as another process would store it: this app's row cache has never seen it. */
async function startElsewhere(): Promise<string> {
  const id = randomUUID();
  await insertTask(t.app.db.kysely, {
    id,
    owner: 'alice',
    kind: 'manual',
    input: {},
    ttlMs: 3_600_000,
    pollIntervalMs: 1_000,
    timeoutMs: 60_000,
    idempotencyKey: null,
    runAt: null,
    priority: 0,
    concurrencyKey: null,
    concurrencyLimit: null,
    retry: { maxAttempts: 3, initialDelayMs: 1_000, factor: 2, maxDelayMs: 60_000 },
  });
  return id;
}

async function start(): Promise<string> {
  const response = await t.gql(
    'mutation { startTask(input: { kind: "manual" }) { id } }',
    {},
    alice,
  );
  return response.data.startTask.id;
}

describe('OutcomeWriter', () => {
  it('completes tasks that finish together, each only under its own lease, and announces each', async () => {
    const ids = [await start(), await start(), await start()];
    const claimed = await claimTasks(t.app.db.kysely, 'test-worker', ['manual'], 3, 60_000);
    expect(claimed.map((r) => r.id).sort()).toEqual([...ids].sort());
    const seen = new Map<string, string>();
    const unwatch = ids.map((id) =>
      t.app.events.watch(id, (row) => row && seen.set(id, row.status)),
    );

    const writer = new OutcomeWriter(t.app.db.kysely);
    const [a, b, c] = claimed;
    const outcomes = await Promise.all([
      writer.complete(a!.id, { workerId: 'test-worker', attempt: a!.attempt }, { n: 1 }),
      writer.complete(b!.id, { workerId: 'test-worker', attempt: b!.attempt + 1 }, { n: 2 }), // a lease it does not hold
      writer.complete(c!.id, { workerId: 'test-worker', attempt: c!.attempt }, null),
    ]);
    expect(outcomes[0]).toMatchObject({
      id: a!.id,
      status: 'completed',
      result: { n: 1 },
      version: a!.version + 1,
      worker_id: null,
    });
    expect(outcomes[1]).toBeUndefined();
    expect(outcomes[2]).toMatchObject({
      id: c!.id,
      status: 'completed',
      result: null,
      version: c!.version + 1,
    });
    expect(await findStoredTask(t.app.db.kysely, b!.id)).toMatchObject({
      status: 'working',
      version: b!.version,
      worker_id: 'test-worker',
    });

    await eventually(async () =>
      seen.get(a!.id) === 'completed' && seen.get(c!.id) === 'completed' ? true : undefined,
    );
    expect(seen.has(b!.id)).toBe(false);
    for (const off of unwatch) off();
  });

  it('reads back only the summary of a task nobody here watches or keeps; a watched one comes whole to its watcher', async () => {
    const ids = [await start(), await startElsewhere()];
    const claimed = await claimTasks(t.app.db.kysely, 'test-worker', ['manual'], 2, 60_000);
    const [watched, unwatched] = ids.map((id) => claimed.find((r) => r.id === id)!);
    const seen: TaskRow[] = [];
    const unwatch = t.app.events.watch(watched!.id, (row) => {
      if (row) seen.push(row);
    });

    const writer = new OutcomeWriter(t.app.db.kysely, t.app.events);
    const lease = (row: TaskRow) => ({ workerId: 'test-worker', attempt: row.attempt });
    const [whole, summary] = await Promise.all([
      writer.complete(watched!.id, lease(watched!), { n: 1 }),
      writer.complete(unwatched!.id, lease(unwatched!), { n: 2 }),
    ]);
    // Handed to the watcher as the statement returns, before any NOTIFY is read.
    expect(seen).toEqual([whole]);
    expect(whole).toEqual(await findStoredTask(t.app.db.kysely, watched!.id));
    expect(whole).toMatchObject({ status: 'completed', result: { n: 1 }, owner: 'alice' });
    expect(summary).toEqual({
      id: unwatched!.id,
      version: unwatched!.version + 1,
      status: 'completed',
      run_at: unwatched!.run_at,
      summary: true,
    });
    unwatch();
  });

  it('reads back summaries alone when no task of the batch is watched or kept, and writes each outcome in full', async () => {
    const ids = [await startElsewhere(), await startElsewhere()];
    const claimed = await claimTasks(t.app.db.kysely, 'test-worker', ['manual'], 2, 60_000);
    const [done, retried] = ids.map((id) => claimed.find((r) => r.id === id)!);
    const lease = (row: TaskRow) => ({ workerId: 'test-worker', attempt: row.attempt });
    const failure = { code: 'BOOM', message: 'It broke.' };
    const writer = new OutcomeWriter(t.app.db.kysely, t.app.events);
    const before = Date.now();
    const written = await Promise.all([
      writer.complete(done!.id, lease(done!), { n: 3 }),
      writer.retryOrFail(retried!.id, lease(retried!), failure, 60_000),
    ]);
    const [doneRow, retriedRow] = await Promise.all(
      ids.map((id) => findStoredTask(t.app.db.kysely, id)),
    );
    expect(doneRow).toMatchObject({ status: 'completed', result: { n: 3 }, worker_id: null });
    expect(retriedRow).toMatchObject({ status: 'working', hold: 'time', last_error: failure });
    expect(retriedRow!.run_at.getTime()).toBeGreaterThanOrEqual(before + 59_000);
    expect(written).toEqual([
      {
        id: done!.id,
        version: done!.version + 1,
        status: 'completed',
        run_at: done!.run_at,
        summary: true,
      },
      {
        id: retried!.id,
        version: retried!.version + 1,
        status: 'working',
        run_at: retriedRow!.run_at,
        summary: true,
      },
    ]);
  });

  it('reads back whole a task whose row this process keeps, and keeps it: the next read costs no query', async () => {
    const id = await start(); // through this app: its row is kept
    const [row] = await claimTasks(t.app.db.kysely, 'test-worker', ['manual'], 1, 60_000);
    const writer = new OutcomeWriter(t.app.db.kysely, t.app.events);
    const whole = await writer.complete(id, { workerId: 'test-worker', attempt: row!.attempt }, 5);
    expect(whole).toMatchObject({ id, status: 'completed', result: 5, owner: 'alice' });
    const { misses } = t.app.events.cacheStats;
    expect(await t.app.events.read(id)).toEqual(whole);
    expect(t.app.events.cacheStats.misses).toBe(misses);
  });

  it("reads a summary's task for a watcher that came while its statement was out", async () => {
    const id = await startElsewhere();
    const [row] = await claimTasks(t.app.db.kysely, 'test-worker', ['manual'], 1, 60_000);
    const writer = new OutcomeWriter(t.app.db.kysely, t.app.events);
    const written = writer.complete(id, { workerId: 'test-worker', attempt: row!.attempt }, 7);
    // The writer builds its statement on the next tick, the task unwatched; a watcher arrives
    // once it is on its way.
    await new Promise((resolve) => process.nextTick(resolve));
    const seen: TaskRow[] = [];
    const unwatch = t.app.events.watch(id, (changed) => {
      if (changed) seen.push(changed);
    });
    expect(await written).toMatchObject({ summary: true, status: 'completed' });
    await eventually(async () => (seen.length > 0 ? true : undefined));
    expect(seen).toEqual([await findStoredTask(t.app.db.kysely, id)]);
    expect(seen[0]).toMatchObject({ status: 'completed', result: 7 });
    unwatch();
  });

  it('refuses a result JSON cannot carry without writing anything', async () => {
    const id = await start();
    const [row] = await claimTasks(t.app.db.kysely, 'test-worker', ['manual'], 1, 60_000);
    expect(row!.id).toBe(id);
    const writer = new OutcomeWriter(t.app.db.kysely);
    await expect(
      writer.complete(id, { workerId: 'test-worker', attempt: row!.attempt }, { big: 1n }),
    ).rejects.toThrow(TypeError);
    expect(await findStoredTask(t.app.db.kysely, id)).toMatchObject({
      status: 'working',
      version: row!.version,
    });
  });

  it('writes failures and retries in the same statement as completions, each under its own lease', async () => {
    const ids = [await start(), await start(), await start(), await start()];
    const claimed = await claimTasks(t.app.db.kysely, 'test-worker', ['manual'], 4, 60_000);
    expect(claimed.map((r) => r.id).sort()).toEqual([...ids].sort());
    const [a, b, c, d] = claimed;
    const lease = (row: typeof a, stale = false) => ({
      workerId: 'test-worker',
      attempt: row!.attempt + (stale ? 1 : 0),
    });
    const failure = { code: 'BOOM', message: 'It broke.' };
    const writer = new OutcomeWriter(t.app.db.kysely);
    const before = Date.now();
    const [done, failed, retried, refused] = await Promise.all([
      writer.complete(a!.id, lease(a), { n: 1 }),
      writer.fail(b!.id, lease(b), failure),
      writer.retryOrFail(c!.id, lease(c), failure, 60_000),
      writer.retryOrFail(d!.id, lease(d, true), failure, 0), // a fence it does not hold
    ]);
    expect(done).toMatchObject({ status: 'completed', result: { n: 1 }, progress: 1 });
    expect(failed).toMatchObject({
      status: 'failed',
      error: failure,
      last_error: failure,
      worker_id: null,
      lease_expires_at: null,
      version: b!.version + 1,
    });
    expect(retried).toMatchObject({
      status: 'working',
      error: null,
      last_error: failure,
      hold: 'time',
      worker_id: null,
      version: c!.version + 1,
    });
    expect(retried!.run_at.getTime()).toBeGreaterThanOrEqual(before + 59_000);
    expect((retried as TaskRow).status_message).toMatch(
      /^Attempt 1 of 3 failed \(BOOM\); the next runs at /,
    );
    expect(refused).toBeUndefined();
    expect(await findStoredTask(t.app.db.kysely, d!.id)).toMatchObject({
      status: 'working',
      version: d!.version,
      worker_id: 'test-worker',
      last_error: null,
    });
  });

  it('fails a retried task whose attempts are spent', async () => {
    const id = await start();
    const [row] = await claimTasks(t.app.db.kysely, 'test-worker', ['manual'], 1, 60_000);
    expect(row!.id).toBe(id);
    await t.app.db.kysely
      .updateTable('tasks')
      .set({ max_attempts: 1 })
      .where('id', '=', id)
      .execute();
    const failure = { code: 'BOOM', message: 'It broke.' };
    const written = await new OutcomeWriter(t.app.db.kysely).retryOrFail(
      id,
      { workerId: 'test-worker', attempt: row!.attempt },
      failure,
      0,
    );
    expect(written).toMatchObject({ status: 'failed', error: failure, hold: null });
  });
});
