import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, startTestApp, type TestApp } from '../helpers/app.js';
import { hold } from '../helpers/kinds.js';
import { restClient } from '../helpers/rest.js';

/** retryTask and startTasks, on GraphQL and REST (DESIGN §15). */

const FIELDS = 'id kind status input labels retryOf';
const START = `mutation($input: StartTaskInput!) { startTask(input: $input) { ${FIELDS} } }`;
const GET = `query($id: ID!) { task(id: $id) { ${FIELDS} version } }`;
const RETRY = `mutation($id: ID!) { retryTask(id: $id) { ${FIELDS} } }`;
const BATCH = `mutation($inputs: [StartTaskInput!]!) { startTasks(inputs: $inputs) { ${FIELDS} } }`;

let t: TestApp;
let alice: string;
let api: ReturnType<typeof restClient>;
beforeAll(async () => {
  t = await startTestApp({ kinds: [hold] });
  alice = await t.token('alice');
  api = restClient(t.url);
});
afterAll(() => t?.stop());

async function settled(input: Record<string, unknown>, status: string) {
  const res = await t.gql(START, { input }, alice);
  expect(res.errors).toBeUndefined();
  const id = res.data.startTask.id as string;
  return eventually(async () => {
    const task = (await t.gql(GET, { id }, alice)).data.task;
    return task.status === status ? task : undefined;
  });
}

/** The owner's stored task count, straight from the table. */
async function stored(owner: string): Promise<number> {
  const row = await t.app.db.kysely
    .selectFrom('tasks')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('owner', '=', owner)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

describe('retryTask', () => {
  it('starts a failed task again as a new task linked by retryOf; the old one stays', async () => {
    const input = { ms: 0, fail: 'broken' };
    const failed = await settled({ kind: 'sleep', input, labels: { r: '1' } }, 'FAILED');
    const res = await t.gql(RETRY, { id: failed.id }, alice);
    expect(res.errors).toBeUndefined();
    const again = res.data.retryTask;
    expect(again).toMatchObject({ kind: 'sleep', input, labels: { r: '1' }, retryOf: failed.id });
    expect(again.id).not.toBe(failed.id);
    const old = (await t.gql(GET, { id: failed.id }, alice)).data.task;
    expect(old).toMatchObject({ status: 'FAILED', version: failed.version, retryOf: null });
  });

  it('copies priority, concurrency key and limit and the retry policy to the re-run', async () => {
    const retry = { maxAttempts: 5, initialDelayMs: 2_000, factor: 3, maxDelayMs: 90_000 };
    const managed = { priority: 7, concurrencyKey: 'k-1', concurrencyLimit: 2, retry };
    const started = (await t.gql(START, { input: { kind: 'hold', ...managed } }, alice)).data
      .startTask;
    await t.gql(`mutation($id: ID!) { cancelTask(id: $id) { id } }`, { id: started.id }, alice);
    const res = await t.gql(
      `mutation($id: ID!) { retryTask(id: $id) { id retryOf priority concurrencyKey maxAttempts } }`,
      { id: started.id },
      alice,
    );
    expect(res.errors).toBeUndefined();
    expect(res.data.retryTask).toMatchObject({
      retryOf: started.id,
      priority: 7,
      concurrencyKey: 'k-1',
      maxAttempts: 5,
    });
    const row = await t.app.db.kysely
      .selectFrom('tasks')
      .select([
        'concurrency_limit',
        'retry_initial_delay_ms',
        'retry_factor',
        'retry_max_delay_ms',
        'idempotency_key',
      ])
      .where('id', '=', res.data.retryTask.id)
      .executeTakeFirstOrThrow();
    expect(row).toEqual({
      concurrency_limit: 2,
      retry_initial_delay_ms: 2_000,
      retry_factor: 3,
      retry_max_delay_ms: 90_000,
      idempotency_key: null,
    });
  });

  it('starts a cancelled task again, on POST /v1/jobs/{id}/retry with 202', async () => {
    const started = (await t.gql(START, { input: { kind: 'hold', labels: { r: '2' } } }, alice))
      .data.startTask;
    await t.gql(`mutation($id: ID!) { cancelTask(id: $id) { id } }`, { id: started.id }, alice);
    const res = await api('POST', `/v1/jobs/${started.id}/retry`, { token: alice });
    expect(res.status).toBe(202);
    expect(res.body).toMatchObject({ status: 'working', labels: { r: '2' }, retryOf: started.id });
    expect(res.headers.get('location')).toBe(`/v1/jobs/${res.body.taskId}`);
  });

  it('refuses a completed or a working task as TASK_NOT_RETRYABLE (REST 409)', async () => {
    const completed = await settled({ kind: 'sleep', input: { ms: 0 } }, 'COMPLETED');
    const working = (await t.gql(START, { input: { kind: 'hold' } }, alice)).data.startTask;
    for (const id of [completed.id, working.id]) {
      const before = await stored('alice');
      const res = await t.gql(RETRY, { id }, alice);
      expect(res.errors?.[0]?.extensions?.code).toBe('TASK_NOT_RETRYABLE');
      const rest = await api('POST', `/v1/jobs/${id}/retry`, { token: alice });
      expect(rest.status).toBe(409);
      expect(rest.body.code).toBe('TASK_NOT_RETRYABLE');
      expect(await stored('alice')).toBe(before);
    }
  });

  it("answers NOT_FOUND for another principal's task", async () => {
    const failed = await settled({ kind: 'sleep', input: { ms: 0, fail: 'x' } }, 'FAILED');
    const bob = await t.token('bob');
    const res = await t.gql(RETRY, { id: failed.id }, bob);
    expect(res.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
    expect((await api('POST', `/v1/jobs/${failed.id}/retry`, { token: bob })).status).toBe(404);
  });
});

describe('startTasks', () => {
  it('starts every entry in order and returns them', async () => {
    const inputs = Array.from({ length: 5 }, (_, i) => ({
      kind: 'hold',
      input: { i },
      labels: { batch: 'b1' },
    }));
    const res = await t.gql(BATCH, { inputs }, alice);
    expect(res.errors).toBeUndefined();
    expect(res.data.startTasks.map((x: { input: { i: number } }) => x.input.i)).toEqual([
      0, 1, 2, 3, 4,
    ]);
    expect(new Set(res.data.startTasks.map((x: { id: string }) => x.id)).size).toBe(5);
  });

  it('stores nothing when one entry is bad, naming its index', async () => {
    const carol = await t.token('carol');
    const inputs = Array.from({ length: 40 }, (_, i) => ({ kind: 'hold', input: { i } }));
    inputs[37] = { kind: 'hold', input: { i: 37 }, labels: { Bad: 'x' } } as never;
    const res = await t.gql(BATCH, { inputs }, carol);
    expect(res.errors?.[0]?.extensions).toMatchObject({ code: 'BAD_USER_INPUT', index: 37 });
    expect(res.errors?.[0]?.message).toMatch(/entry 37/);
    const rest = await api('POST', '/v1/jobs/batch', { token: carol, body: { jobs: inputs } });
    expect(rest.status).toBe(422);
    expect(rest.body.code).toBe('BAD_USER_INPUT');
    expect(rest.headers.get('content-type')).toBe('application/problem+json');
    expect(rest.body.index).toBe(37);
    expect(rest.body.detail).toMatch(/^entry 37: /);
    expect(await stored('carol')).toBe(0);
  });

  it('names a malformed REST entry by its index as a problem member', async () => {
    const frank = await t.token('frank');
    const good = { kind: 'hold', input: {} };
    for (const [index, bad] of [
      [0, 'not an object'],
      [2, { ...good, idempotencyKey: 7 }],
      [1, { kind: 42 }],
      [3, { kind: 'no-such-kind' }],
    ] as const) {
      const jobs = [good, good, good, good];
      jobs[index] = bad as never;
      const res = await api('POST', '/v1/jobs/batch', { token: frank, body: { jobs } });
      expect(res.status).toBe(422);
      expect(res.body).toMatchObject({ code: 'BAD_USER_INPUT', index });
      expect(res.body.detail).toMatch(new RegExp(`^entry ${index}: `));
    }
    const whole = await api('POST', '/v1/jobs/batch', { token: frank, body: { jobs: {} } });
    expect(whole.body).not.toHaveProperty('index');
    expect(await stored('frank')).toBe(0);
  });

  it('stores nothing when a later entry reuses a key with another request', async () => {
    const dave = await t.token('dave');
    const inputs = [
      { kind: 'hold', input: { a: 1 }, idempotencyKey: 'k' },
      { kind: 'hold', input: { a: 2 } },
      { kind: 'hold', input: { a: 3 }, idempotencyKey: 'k' },
    ];
    const res = await t.gql(BATCH, { inputs }, dave);
    expect(res.errors?.[0]?.extensions).toMatchObject({ code: 'IDEMPOTENCY_KEY_REUSED', index: 2 });
    expect(await stored('dave')).toBe(0);
  });

  it('gives the same task twice for one key and request, and creates nothing on a replay', async () => {
    const erin = await t.token('erin');
    const jobs = [
      { kind: 'hold', input: { a: 1 }, idempotencyKey: 'same' },
      { kind: 'hold', input: { a: 1 }, idempotencyKey: 'same' },
      { kind: 'hold', input: { a: 2 }, idempotencyKey: 'other', labels: { l: 'v' } },
    ];
    const first = await api('POST', '/v1/jobs/batch', { token: erin, body: { jobs } });
    expect(first.status).toBe(202);
    const ids = first.body.jobs.map((h: { taskId: string }) => h.taskId);
    expect(ids[0]).toBe(ids[1]);
    expect(ids[2]).not.toBe(ids[0]);
    expect(first.body.jobs[2].labels).toEqual({ l: 'v' });
    expect(await stored('erin')).toBe(2);
    const replay = await api('POST', '/v1/jobs/batch', { token: erin, body: { jobs } });
    expect(replay.status).toBe(202);
    expect(replay.body.jobs.map((h: { taskId: string }) => h.taskId)).toEqual(ids);
    const overGraphQL = await t.gql(BATCH, { inputs: jobs }, erin);
    expect(overGraphQL.data.startTasks.map((x: { id: string }) => x.id)).toEqual(ids);
    expect(await stored('erin')).toBe(2);
  });

  it('refuses an empty batch and one of 101 entries', async () => {
    for (const n of [0, 101]) {
      const inputs = Array.from({ length: n }, () => ({ kind: 'hold' }));
      const res = await t.gql(BATCH, { inputs }, alice);
      expect(res.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
      const rest = await api('POST', '/v1/jobs/batch', { token: alice, body: { jobs: inputs } });
      expect(rest.status).toBe(422);
    }
    const notList = await api('POST', '/v1/jobs/batch', { token: alice, body: { jobs: {} } });
    expect(notList.status).toBe(422);
  });
});
