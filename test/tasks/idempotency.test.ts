import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineTaskKind } from '../../src/tasks/kinds.js';
import { eventually, startTestApp, type TestApp } from '../helpers/app.js';
import { hold } from '../helpers/kinds.js';
import { restClient } from '../helpers/rest.js';

const START = `mutation($input: StartTaskInput!) { startTask(input: $input) { id kind input version status } }`;
const GET = `query($id: ID!) { task(id: $id) { id } }`;

const other = defineTaskKind({
  name: 'other',
  description: 'another kind',
  inputSchema: { type: 'object' },
  run: async () => null,
});

let t: TestApp;
let alice: string;
let bob: string;
beforeAll(async () => {
  // TASK_MIN_TTL_MS=1 lets a keyed task expire within the test; the purge stays out of it.
  t = await startTestApp({
    env: { TASK_MIN_TTL_MS: '1', TASK_PURGE_INTERVAL_MS: '86400000' },
    kinds: [hold, other],
  });
  alice = await t.token('alice');
  bob = await t.token('bob');
});
afterAll(() => t?.stop());

async function start(token: string, input: Record<string, unknown>) {
  return t.gql(START, { input }, token);
}

/** Rows stored for this owner and key, straight from the table (expired or not). */
async function rowsWithKey(owner: string, key: string) {
  return t.app.db.kysely
    .selectFrom('tasks')
    .select(['id', 'expires_at'])
    .where('owner', '=', owner)
    .where('idempotency_key', '=', key)
    .execute();
}

describe('idempotencyKey', () => {
  it('creates one task when twenty requests with the same key race, and every one returns it', async () => {
    const input = { kind: 'hold', input: { n: 1 }, idempotencyKey: 'race-1' };
    const results = await Promise.all(Array.from({ length: 20 }, () => start(alice, input)));
    for (const res of results) expect(res.errors).toBeUndefined();
    const ids = new Set(results.map((res) => res.data.startTask.id));
    expect(ids.size).toBe(1);
    expect(await rowsWithKey('alice', 'race-1')).toHaveLength(1);
    // Nothing changed the task: every caller saw version 1 of the same row.
    expect(new Set(results.map((res) => res.data.startTask.version))).toEqual(new Set([1]));
  });

  it('returns the existing task for the same kind and input written with keys in another order', async () => {
    const first = await start(alice, {
      kind: 'hold',
      input: { a: 1, b: { c: [1, 2], d: 'x' } },
      idempotencyKey: 'order',
    });
    const again = await start(alice, {
      kind: 'hold',
      input: { b: { d: 'x', c: [1, 2] }, a: 1 },
      idempotencyKey: 'order',
    });
    expect(again.errors).toBeUndefined();
    expect(again.data.startTask.id).toBe(first.data.startTask.id);
    expect(await rowsWithKey('alice', 'order')).toHaveLength(1);
  });

  it('refuses the same key with another kind or another input as IDEMPOTENCY_KEY_REUSED', async () => {
    const first = await start(alice, { kind: 'hold', input: { a: 1 }, idempotencyKey: 'reuse' });
    expect(first.errors).toBeUndefined();
    const otherKind = await start(alice, {
      kind: 'other',
      input: { a: 1 },
      idempotencyKey: 'reuse',
    });
    expect(otherKind.errors?.[0]?.extensions?.code).toBe('IDEMPOTENCY_KEY_REUSED');
    const otherInput = await start(alice, {
      kind: 'hold',
      input: { a: 2 },
      idempotencyKey: 'reuse',
    });
    expect(otherInput.errors?.[0]?.extensions?.code).toBe('IDEMPOTENCY_KEY_REUSED');
    // Only object keys are unordered: an added null property or a reordered array is another input.
    const extra = await start(alice, {
      kind: 'hold',
      input: { a: 1, extra: null },
      idempotencyKey: 'reuse',
    });
    expect(extra.errors?.[0]?.extensions?.code).toBe('IDEMPOTENCY_KEY_REUSED');
    await start(alice, { kind: 'hold', input: { list: [1, 2] }, idempotencyKey: 'reuse-array' });
    const swapped = await start(alice, {
      kind: 'hold',
      input: { list: [2, 1] },
      idempotencyKey: 'reuse-array',
    });
    expect(swapped.errors?.[0]?.extensions?.code).toBe('IDEMPOTENCY_KEY_REUSED');
    const rows = await rowsWithKey('alice', 'reuse');
    expect(rows.map((r) => r.id)).toEqual([first.data.startTask.id]);
  });

  it("keeps another principal's same key independent", async () => {
    const mine = await start(alice, {
      kind: 'hold',
      input: { a: 1 },
      idempotencyKey: 'shared-name',
    });
    const theirs = await start(bob, {
      kind: 'hold',
      input: { a: 1 },
      idempotencyKey: 'shared-name',
    });
    const theirsOther = await start(bob, {
      kind: 'other',
      input: {},
      idempotencyKey: 'shared-name-2',
    });
    expect(theirs.errors).toBeUndefined();
    expect(theirsOther.errors).toBeUndefined();
    expect(theirs.data.startTask.id).not.toBe(mine.data.startTask.id);
    // Bob's replay returns bob's task, never alice's.
    const bobAgain = await start(bob, {
      kind: 'hold',
      input: { a: 1 },
      idempotencyKey: 'shared-name',
    });
    expect(bobAgain.data.startTask.id).toBe(theirs.data.startTask.id);
    // And alice's key is not burnt by bob using it with another kind.
    const bobOther = await start(bob, { kind: 'other', input: {}, idempotencyKey: 'shared-name' });
    expect(bobOther.errors?.[0]?.extensions?.code).toBe('IDEMPOTENCY_KEY_REUSED');
    const aliceAgain = await start(alice, {
      kind: 'hold',
      input: { a: 1 },
      idempotencyKey: 'shared-name',
    });
    expect(aliceAgain.data.startTask.id).toBe(mine.data.startTask.id);
  });

  it('frees the key once its task has expired: the same key then starts a new task, even with another input', async () => {
    const first = await start(alice, {
      kind: 'hold',
      input: { v: 1 },
      idempotencyKey: 'short-lived',
      ttlMs: 200,
    });
    const oldId: string = first.data.startTask.id;
    await eventually(async () =>
      (await t.gql(GET, { id: oldId }, alice)).data.task === null ? true : undefined,
    );
    // Expired, not purged: the old row is still stored with the key.
    expect((await rowsWithKey('alice', 'short-lived')).map((r) => r.id)).toEqual([oldId]);

    const second = await start(alice, {
      kind: 'other',
      input: { v: 2 },
      idempotencyKey: 'short-lived',
    });
    expect(second.errors).toBeUndefined();
    expect(second.data.startTask.id).not.toBe(oldId);
    expect(second.data.startTask).toMatchObject({ kind: 'other', input: { v: 2 } });
    const rows = await rowsWithKey('alice', 'short-lived');
    expect(rows.map((r) => r.id)).toEqual([second.data.startTask.id]);
  });

  it('creates one fresh task when requests race on a key whose task has expired', async () => {
    const first = await start(alice, {
      kind: 'hold',
      input: {},
      idempotencyKey: 'expired-race',
      ttlMs: 100,
    });
    const oldId: string = first.data.startTask.id;
    await eventually(async () =>
      (await t.gql(GET, { id: oldId }, alice)).data.task === null ? true : undefined,
    );
    const results = await Promise.all(
      Array.from({ length: 10 }, () =>
        start(alice, { kind: 'hold', input: {}, idempotencyKey: 'expired-race' }),
      ),
    );
    for (const res of results) expect(res.errors).toBeUndefined();
    const ids = new Set(results.map((res) => res.data.startTask.id));
    expect(ids.size).toBe(1);
    expect(ids.has(oldId)).toBe(false);
    expect(await rowsWithKey('alice', 'expired-race')).toHaveLength(1);
  });

  it('refuses a malformed key as BAD_USER_INPUT', async () => {
    for (const key of ['', 'x'.repeat(256), 'tab\there', 'é']) {
      const res = await start(alice, { kind: 'hold', input: {}, idempotencyKey: key });
      expect(res.errors?.[0]?.extensions?.code, JSON.stringify(key)).toBe('BAD_USER_INPUT');
    }
    expect(
      (await start(alice, { kind: 'hold', input: {}, idempotencyKey: 'x'.repeat(255) })).errors,
    ).toBeUndefined();
  });
});

describe('Idempotency-Key over REST', () => {
  it('answers a replay like the first request: 202, the same Location and task', async () => {
    const call = restClient(t.url);
    const request = {
      token: alice,
      body: { kind: 'hold', input: { job: 'nightly' } },
      headers: { 'idempotency-key': 'rest-1' },
    };
    const first = await call('POST', '/v1/jobs', request);
    expect(first.status).toBe(202);
    const replay = await call('POST', '/v1/jobs', {
      ...request,
      body: { input: { job: 'nightly' }, kind: 'hold' },
    });
    expect(replay.status).toBe(202);
    expect(replay.headers.get('location')).toBe(first.headers.get('location'));
    expect(replay.headers.get('location')).toBe(`/v1/jobs/${first.body.taskId}`);
    expect(replay.headers.get('retry-after')).toBe(first.headers.get('retry-after'));
    expect(replay.body.taskId).toBe(first.body.taskId);
    expect(replay.body.createdAt).toBe(first.body.createdAt);
    expect(await rowsWithKey('alice', 'rest-1')).toHaveLength(1);
  });

  it('shares the key space with GraphQL: a key used by startTask replays over REST', async () => {
    const gql = await start(alice, { kind: 'hold', input: { x: 1 }, idempotencyKey: 'both-faces' });
    const res = await restClient(t.url)('POST', '/v1/jobs', {
      token: alice,
      body: { kind: 'hold', input: { x: 1 } },
      headers: { 'idempotency-key': 'both-faces' },
    });
    expect(res.status).toBe(202);
    expect(res.body.taskId).toBe(gql.data.startTask.id);
  });

  it('answers 422 IDEMPOTENCY_KEY_REUSED as problem+json when the key comes back with another body', async () => {
    const call = restClient(t.url);
    const headers = { 'idempotency-key': 'rest-2' };
    const first = await call('POST', '/v1/jobs', {
      token: alice,
      body: { kind: 'hold', input: { v: 1 } },
      headers,
    });
    expect(first.status).toBe(202);
    for (const body of [
      { kind: 'hold', input: { v: 2 } },
      { kind: 'other', input: { v: 1 } },
    ]) {
      const res = await call('POST', '/v1/jobs', { token: alice, body, headers });
      expect(res.status).toBe(422);
      expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(res.body).toMatchObject({ status: 422, code: 'IDEMPOTENCY_KEY_REUSED' });
      expect(res.headers.get('location')).toBeNull();
    }
    expect(await rowsWithKey('alice', 'rest-2')).toHaveLength(1);
  });

  it('creates one task when twenty REST requests with the same key race', async () => {
    const call = restClient(t.url);
    const request = {
      token: bob,
      body: { kind: 'hold', input: { rest: true } },
      headers: { 'idempotency-key': 'rest-race' },
    };
    const results = await Promise.all(
      Array.from({ length: 20 }, () => call('POST', '/v1/jobs', request)),
    );
    expect(results.map((r) => r.status)).toEqual(Array(20).fill(202));
    expect(new Set(results.map((r) => r.headers.get('location'))).size).toBe(1);
    expect(await rowsWithKey('bob', 'rest-race')).toHaveLength(1);
  });
});
