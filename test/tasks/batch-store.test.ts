import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TaskRow } from '../../src/db/types.js';
import type { StartRequest } from '../../src/tasks/requests.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { hold } from '../helpers/kinds.js';

/**
 * startTasks stores a run of entries in one statement (src/tasks/sql/insert-many.ts): each must
 * come out as startTask stores it alone, in its place, webhooks and keys included.
 */

let t: TestApp;
beforeAll(async () => {
  // No runner: the rows stay as stored.
  t = await startTestApp({ kinds: [hold], env: { ROLE: 'api', WEBHOOK_ALLOW_PRIVATE: 'true' } });
});
afterAll(() => t?.stop());

const actor = (id: string) => ({ id, admin: false });

const REQUESTS: StartRequest[] = [
  { kind: 'hold', input: { plain: true } },
  { kind: 'hold', input: {}, delayMs: 60_000, priority: 7 },
  { kind: 'hold', input: { n: 3 }, concurrencyKey: 'k', concurrencyLimit: 2, ttlMs: 120_000 },
  {
    kind: 'hold',
    retry: { maxAttempts: 5, initialDelayMs: 10, factor: 3, maxDelayMs: 100 },
    labels: { tenant: 'acme', team: 'x' },
  },
  { kind: 'hold', input: { keyed: 1 }, idempotencyKey: 'key-1' },
];

async function row(id: string): Promise<TaskRow> {
  return t.app.db.kysely
    .selectFrom('tasks')
    .selectAll()
    .where('id', '=', id)
    .executeTakeFirstOrThrow() as Promise<TaskRow>;
}

/** What a stored row says beyond who owns it and when it was made: comparable across owners. */
async function shape(id: string) {
  const r = await row(id);
  const created = r.created_at.getTime();
  const labels = await sql<{ n: number }>`
    select count(*)::int as n from task_labels where task_id = ${id}::uuid`.execute(
    t.app.db.kysely,
  );
  return {
    ...r,
    id: undefined,
    owner: undefined,
    created_at: undefined,
    last_updated_at: r.last_updated_at.getTime() - created,
    expires_at: r.expires_at.getTime() - created,
    // A delay is counted from the request: allow for the time between two requests.
    run_at: Math.round((r.run_at.getTime() - created) / 1_000),
    labelRows: labels.rows[0]!.n,
  };
}

describe('startTasks, stored in one statement', () => {
  // With a key, the batch is a transaction (an entry may be settled alone); without keys or
  // webhooks, it is the one statement.
  for (const [path, requests] of [
    ['in a transaction', REQUESTS],
    ['as one statement', REQUESTS.filter((request) => !request.idempotencyKey)],
  ] as const)
    it(`stores each entry as startTask stores it alone (${path})`, async () => {
      const batch = await t.app.tasks.startMany(actor(`batch ${path}`), requests);
      const alone = [];
      for (const request of requests)
        alone.push((await t.app.tasks.start(actor(`alone ${path}`), request)).task);
      expect(batch.map((task) => task.input)).toEqual(alone.map((task) => task.input));
      for (const [i, task] of batch.entries()) {
        expect(await shape(task.id), `entry ${i}`).toEqual(await shape(alone[i]!.id));
        expect(task).toEqual({ ...alone[i], ...apart(task) });
      }
    });

  it('keeps its entries in order, each with or without its webhook, and each key to one task', async () => {
    const requests: StartRequest[] = [
      { kind: 'hold', input: { i: 0 }, idempotencyKey: 'dup' },
      { kind: 'hold', input: { i: 1 }, webhook: { url: 'http://127.0.0.1:9/hook' } },
      { kind: 'hold', input: { i: 2 } },
      { kind: 'hold', input: { i: 0 }, idempotencyKey: 'dup' },
      { kind: 'hold', input: { i: 4 }, webhook: { url: 'http://127.0.0.1:9/other' } },
      { kind: 'hold', input: { i: 5 } },
    ];
    const tasks = await t.app.tasks.startMany(actor('order-owner'), requests);
    expect(tasks.map((task) => (task.input as { i: number }).i)).toEqual([0, 1, 2, 0, 4, 5]);
    expect(tasks[3]!.id).toBe(tasks[0]!.id);
    expect(new Set(tasks.map((task) => task.id)).size).toBe(5);
    const hooks = await t.app.db.kysely
      .selectFrom('task_webhooks')
      .select(['task_id', 'url'])
      .where(
        'task_id',
        'in',
        tasks.map((task) => task.id),
      )
      .execute();
    expect(hooks.sort((a, b) => a.url.localeCompare(b.url))).toEqual([
      { task_id: tasks[1]!.id, url: 'http://127.0.0.1:9/hook' },
      { task_id: tasks[4]!.id, url: 'http://127.0.0.1:9/other' },
    ]);
    // A replay of the whole batch creates nothing and answers the same tasks.
    const again = await t.app.tasks.startMany(actor('order-owner'), [requests[0]!, requests[3]!]);
    expect(again.map((task) => task.id)).toEqual([tasks[0]!.id, tasks[0]!.id]);
  });
});

/** The fields of a task that depend on who made it and when: not compared. */
function apart(task: {
  id: string;
  owner: string;
  createdAt: Date;
  lastUpdatedAt: Date;
  expiresAt: Date;
  runAt: Date | null;
}) {
  const { id, owner, createdAt, lastUpdatedAt, expiresAt, runAt } = task;
  return { id, owner, createdAt, lastUpdatedAt, expiresAt, runAt };
}
