import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineTaskKind } from '../../src/tasks/kinds.js';
import { claimWork } from '../../src/tasks/sql/claim.js';
import type { Task } from '../../src/tasks/task.js';
import { eventually, startTestApp, type TestApp } from '../helpers/app.js';
import { FIRST_CLAIMS_DDL, mostInAnyWindow } from '../helpers/first-claims.js';
import { hold } from '../helpers/kinds.js';
import { rest } from '../helpers/rest.js';

/**
 * The rate limit per key (DESIGN §17) on one process: a kind's or a start's limit of first
 * starts in a sliding period, the held tasks and what they say, the faces' fields. The same
 * guarantee across processes claiming at once is flow-cluster.test.ts's.
 */

const alice = { id: 'alice', admin: false };
const bob = { id: 'bob', admin: false };

/** Rate-limited by its kind: one start an hour per key (by default the owner). */
const hourly = defineTaskKind({
  ...hold,
  name: 'hourly',
  description: 'one start an hour per key',
  rateLimit: { limit: 1, periodMs: 3_600_000 },
});

/** Starts two `hourly` children and returns. */
const fan = defineTaskKind({
  name: 'fan',
  description: 'starts two rate-limited children',
  inputSchema: { type: 'object' },
  async run({ startChild }) {
    await startChild('a', 'hourly', {});
    await startChild('b', 'hourly', {});
    return null;
  },
});

const GQL_START = `mutation($input: StartTaskInput!) { startTask(input: $input) {
  id status rateLimitKey rateLimit { limit periodMs } heldBecause statusMessage } }`;
const GQL_TASK = `query($id: ID!) { task(id: $id) {
  id status rateLimitKey rateLimit { limit periodMs } heldBecause statusMessage attempt } }`;

/** The first claims of a key's tasks, in order (test/helpers/first-claims.ts). */
async function startsOf(t: TestApp, key: string): Promise<Array<{ task_id: string; at: number }>> {
  const result = await sql<{ task_id: string; at: Date }>`
    select task_id, at from test_first_claims where key = ${key} order by at`.execute(
    t.app.db.kysely,
  );
  return result.rows.map((r) => ({ task_id: r.task_id, at: r.at.getTime() }));
}

/** The stored attempt (a claim changes no version, so a cached read may be older). */
async function attemptOf(t: TestApp, id: string): Promise<number | undefined> {
  const result = await sql<{
    attempt: number;
  }>`select attempt from tasks where id = ${id}::uuid`.execute(t.app.db.kysely);
  return result.rows[0]?.attempt;
}

describe('rate limit per key', () => {
  let t: TestApp;
  let token: string;

  beforeAll(async () => {
    t = await startTestApp({ kinds: [hold, hourly, fan], env: { RUNNER_CONCURRENCY: '8' } });
    token = await t.token('alice');
    for (const ddl of FIRST_CLAIMS_DDL) await sql.raw(ddl).execute(t.app.db.kysely);
  });
  afterAll(() => t?.stop());

  async function completed(id: string): Promise<Task> {
    return eventually(async () => {
      const task = await t.app.tasks.get(alice, id);
      return task?.status === 'completed' ? task : undefined;
    }, 30_000);
  }

  it('starts at most the limit in any period, holds the rest saying when, and starts every one once the key frees', async () => {
    const period = 700;
    const ids: string[] = [];
    for (let i = 0; i < 7; i++) {
      const { task } = await t.app.tasks.start(alice, {
        kind: 'sleep',
        input: { ms: 0 },
        rateLimitKey: 'api-a',
        rateLimit: { limit: 2, periodMs: period },
      });
      expect(task).toMatchObject({
        rateLimitKey: 'api-a',
        rateLimit: { limit: 2, periodMs: period },
      });
      ids.push(task.id);
    }
    // Seven starts, two a period: some wait, held by the key, and say until when.
    const held = await eventually(async () => {
      for (const id of ids) {
        const task = await t.app.tasks.get(alice, id);
        if (task?.heldBecause === 'rate_limit') return task;
      }
      return undefined;
    });
    expect(held.statusMessage).toMatch(
      /^Rate limited: next start at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z \(2 per 700 ms\)\.$/,
    );
    expect(held.attempt).toBe(0);
    // None is lost or starved: each completes, once.
    for (const id of ids) {
      const task = await completed(id);
      expect(task).toMatchObject({ attempt: 1, heldBecause: null, statusMessage: null });
    }
    const starts = await startsOf(t, 'api-a');
    expect(starts.map((s) => s.task_id).sort()).toEqual([...ids].sort());
    // In any window of the period, at most two first starts (and two did start together).
    expect(
      mostInAnyWindow(
        starts.map((s) => s.at),
        period,
      ),
    ).toBe(2);
  });

  it('holds one key without delaying another, with the owner as the default key', async () => {
    // The kind allows one start an hour per owner: alice's second waits, bob's first runs.
    const first = await t.app.tasks.start(alice, { kind: 'hourly', input: {} });
    const second = await t.app.tasks.start(alice, { kind: 'hourly', input: {} });
    const other = await t.app.tasks.start(bob, { kind: 'hourly', input: {} });
    expect(first.task).toMatchObject({
      rateLimitKey: null,
      rateLimit: { limit: 1, periodMs: 3_600_000 },
    });
    const waiting = await eventually(async () => {
      const task = await t.app.tasks.get(alice, second.task.id);
      return task?.heldBecause === 'rate_limit' ? task : undefined;
    });
    for (const id of [first.task.id, other.task.id])
      await eventually(async () => ((await attemptOf(t, id)) === 1 ? true : undefined));
    // Its next start is the hour after the first.
    const at = Date.parse(/next start at (\S+) /.exec(waiting.statusMessage!)![1]!);
    const [recorded] = await startsOf(t, 'alice');
    expect(at).toBe(recorded!.at + 3_600_000);
    expect(await attemptOf(t, second.task.id)).toBe(0);
    expect(await t.app.tasks.cancel(alice, second.task.id)).toMatchObject({
      status: 'cancelled',
    });
    await t.app.tasks.cancel(alice, first.task.id);
    await t.app.tasks.cancel(bob, other.task.id);
  });

  it("holds a task's children to their kind's rate limit", async () => {
    const carol = { id: 'carol', admin: false };
    const { task } = await t.app.tasks.start(carol, { kind: 'fan', input: {} });
    const children = await eventually(async () => {
      const page = await t.app.tasks.tree.children(carol, task.id);
      return page.tasks.length === 2 ? page.tasks : undefined;
    });
    expect(children.map((c) => c.rateLimit)).toEqual([
      { limit: 1, periodMs: 3_600_000 },
      { limit: 1, periodMs: 3_600_000 },
    ]);
    await eventually(async () => {
      const held = await Promise.all(children.map((c) => t.app.tasks.get(carol, c.id)));
      return held.filter((c) => c?.heldBecause === 'rate_limit').length === 1 ? true : undefined;
    });
    for (const child of children) await t.app.tasks.cancel(carol, child.id);
  });

  it('counts first starts only: a retry of a rate-limited task is not held', async () => {
    const { task } = await t.app.tasks.start(alice, {
      kind: 'sleep',
      input: { ms: 0, failTimes: 1 },
      rateLimitKey: 'api-retry',
      rateLimit: { limit: 1, periodMs: 3_600_000 },
      retry: { initialDelayMs: 0 },
    });
    expect(await completed(task.id)).toMatchObject({ attempt: 2 });
    expect(await startsOf(t, 'api-retry')).toHaveLength(1);
  });

  it('claims a first start only into a free slot, and says when it left one', async () => {
    // A kind no runner here runs: the claims are this test's.
    const db = t.app.db.kysely;
    await sql`
      insert into tasks (id, owner, kind, ttl_ms, expires_at, poll_interval_ms, max_attempts,
                         timeout_ms, created_at, run_at, rate_limit, rate_period_ms)
      select gen_random_uuid(), 'alice', 'unrun', 3600000, now() + interval '1 hour', 1000, 3,
             60000, now() - i * interval '1 second', now() - i * interval '1 second',
             case when i = 1 then 5 end, case when i = 1 then 3600000 end
      from generate_series(1, 2) i`.execute(db);
    // The older, plain task takes the one slot; the rate-limited one would wait in a queue.
    const first = await claimWork(db, 'w', ['unrun'], 4, 60_000, { free: 1 });
    expect(first.rows.map((r) => r.rate_limit)).toEqual([null]);
    expect(first.waiting).toBe(true);
    const second = await claimWork(db, 'w', ['unrun'], 4, 60_000, { free: 1 });
    expect(second.rows.map((r) => r.rate_limit)).toEqual([5]);
    expect(second.waiting).toBe(false);
  });

  it('takes rateLimitKey and rateLimit on GraphQL and says heldBecause', async () => {
    const input = {
      kind: 'hold',
      input: {},
      rateLimitKey: 'gql-key',
      rateLimit: { limit: 1, periodMs: 3_600_000 },
    };
    const a = await t.gql(GQL_START, { input }, token);
    const b = await t.gql(GQL_START, { input }, token);
    expect(a.errors).toBeUndefined();
    expect(a.data.startTask).toMatchObject({
      status: 'WORKING',
      rateLimitKey: 'gql-key',
      rateLimit: { limit: 1, periodMs: 3_600_000 },
    });
    const task = await eventually(async () => {
      const res = await t.gql(GQL_TASK, { id: b.data.startTask.id }, token);
      return res.data?.task?.heldBecause === 'RATE_LIMIT' ? res.data.task : undefined;
    });
    expect(task.statusMessage).toMatch(/^Rate limited: next start at /);
    for (const res of [a, b]) await t.app.tasks.cancel(alice, res.data.startTask.id);
    // Run again, a task keeps its key and limit.
    const again = await t.app.tasks.retry(alice, b.data.startTask.id);
    expect(again).toMatchObject({
      rateLimitKey: 'gql-key',
      rateLimit: { limit: 1, periodMs: 3_600_000 },
    });
    await t.app.tasks.cancel(alice, again.id);
  });

  it('takes the same fields in a REST body and a batch, and says heldBecause in the handle', async () => {
    const body = {
      kind: 'hold',
      input: {},
      rateLimitKey: 'rest-key',
      rateLimit: { limit: 1, periodMs: 3_600_000 },
    };
    const one = await rest(t.url, 'POST', '/v1/jobs', { token, body });
    expect(one.status).toBe(202);
    const batch = await rest(t.url, 'POST', '/v1/jobs/batch', {
      token,
      body: { jobs: [body, body] },
    });
    expect(batch.status).toBe(202);
    const ids = [one.body.taskId, ...batch.body.jobs.map((j: { taskId: string }) => j.taskId)];
    const handles = await eventually(async () => {
      const all = await Promise.all(
        ids.map(async (id) => (await rest(t.url, 'GET', `/v1/jobs/${id}`, { token })).body),
      );
      return all.filter((h) => h.heldBecause === 'rate_limit').length === 2 ? all : undefined;
    });
    for (const handle of handles.filter((h) => h.heldBecause))
      expect(handle.statusMessage).toMatch(/^Rate limited: next start at /);
    for (const id of ids) await t.app.tasks.cancel(alice, id);
  });

  it.each([
    [
      { rateLimit: { limit: 0, periodMs: 1000 } },
      'rateLimit.limit must be an integer from 1 to 1000',
    ],
    [
      { rateLimit: { limit: 1001, periodMs: 1000 } },
      'rateLimit.limit must be an integer from 1 to 1000',
    ],
    [
      { rateLimit: { limit: 1, periodMs: 86_400_001 } },
      'rateLimit.periodMs must be an integer from 1 to 86400000',
    ],
    [{ rateLimit: { limit: 1, periodMs: 0 } }, 'rateLimit.periodMs must be an integer from 1'],
    [{ rateLimitKey: '' }, 'rateLimitKey must be 1 to 255 printable'],
    [{ rateLimitKey: 'x'.repeat(256) }, 'rateLimitKey must be 1 to 255 printable'],
  ])(
    'refuses %j with BAD_USER_INPUT naming the field and its range, on GraphQL and REST',
    async (fields, message) => {
      const res = await t.gql(GQL_START, { input: { kind: 'hold', input: {}, ...fields } }, token);
      expect(res.data).toBeNull();
      expect(res.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
      expect(res.errors?.[0]?.message).toContain(message);
      const body = { kind: 'hold', input: {}, ...fields };
      const single = await rest(t.url, 'POST', '/v1/jobs', { token, body });
      expect(single.status).toBe(422);
      expect(single.body.detail).toContain(message);
      const batch = await rest(t.url, 'POST', '/v1/jobs/batch', {
        token,
        body: { jobs: [{ kind: 'hold', input: {} }, body] },
      });
      expect(batch.status).toBe(422);
      expect(batch.body.detail).toContain(`entry 1: ${message}`);
    },
  );

  it('refuses a REST rateLimit that is not an object, and a kind declared with a bad one', async () => {
    const res = await rest(t.url, 'POST', '/v1/jobs', {
      token,
      body: { kind: 'hold', input: {}, rateLimit: 5 },
    });
    expect(res.status).toBe(422);
    expect(res.body.detail).toContain('rateLimit must be a JSON object.');
    expect(() =>
      defineTaskKind({ ...hold, name: 'bad-rate', rateLimit: { limit: 5, periodMs: 0 } }),
    ).toThrow('kind bad-rate: rateLimit.periodMs must be an integer from 1 to 86400000');
  });
});
