import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_SCOPES, eventually, startTestApp, type TestApp } from './helpers/app.js';
import { holdWith } from './helpers/kinds.js';
import { type RestResponse, restClient } from './helpers/rest.js';

/** Waits until cancelled; its poll interval is not a whole number of seconds. */
const hold = holdWith({ pollIntervalMs: 2_500 });
const quick = holdWith({ name: 'quick', pollIntervalMs: 200 });

const HANDLE_KEYS = [
  'createdAt',
  'labels',
  'lastUpdatedAt',
  'pollIntervalMs',
  'resultType',
  'status',
  'taskId',
  'ttlMs',
];
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,3})?Z$/;
const UNKNOWN_ID = '5b8c1e2a-3f4d-4e6f-8a9b-0c1d2e3f4a5b';

let t: TestApp;
let call: ReturnType<typeof restClient>;
let alice: string;
let bob: string;
beforeAll(async () => {
  t = await startTestApp({ kinds: [hold, quick] });
  call = restClient(t.url);
  alice = await t.token('alice');
  bob = await t.token('bob');
});
afterAll(() => t?.stop());

function expectProblem(res: RestResponse, status: number, code: string): void {
  expect(res.status, res.text).toBe(status);
  expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  expect(res.body).toMatchObject({ status, code });
  expect(typeof res.body.title).toBe('string');
  expect(res.body.title.length).toBeGreaterThan(0);
  expect(typeof res.body.detail).toBe('string');
}

async function post(token: string, body: unknown, headers: Record<string, string> = {}) {
  return call('POST', '/v1/jobs', { token, body, headers });
}

/** Polls GET /v1/jobs/{id} until the status is `status`. */
async function untilStatus(token: string, id: string, status: string): Promise<RestResponse> {
  return eventually(async () => {
    const res = await call('GET', `/v1/jobs/${id}`, { token });
    return res.body?.status === status ? res : undefined;
  });
}

describe('POST /v1/jobs', () => {
  it('answers 202 Accepted with Location, Retry-After in whole seconds and exactly the handle', async () => {
    const res = await post(alice, { kind: 'hold', input: {}, ttlMs: 60_000 });
    expect(res.status).toBe(202);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(Object.keys(res.body).sort()).toEqual(HANDLE_KEYS);
    expect(res.body).toMatchObject({
      resultType: 'task',
      status: 'working',
      ttlMs: 60_000,
      pollIntervalMs: 2_500,
    });
    expect(res.body.taskId).toMatch(
      /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
    );
    expect(res.body.createdAt).toMatch(ISO);
    expect(res.body.lastUpdatedAt).toBe(res.body.createdAt);
    expect(res.headers.get('location')).toBe(`/v1/jobs/${res.body.taskId}`);
    // 2 500 ms → 3 s: rounded up, never asking a client to come back early.
    expect(res.headers.get('retry-after')).toBe('3');
  });

  it('never sends Retry-After: 0 for a sub-second poll interval', async () => {
    const res = await post(alice, { kind: 'quick' });
    expect(res.status).toBe(202);
    expect(res.body.pollIntervalMs).toBe(200);
    expect(res.headers.get('retry-after')).toBe('1');
  });

  it('stores the task so GraphQL sees the same one at once', async () => {
    const res = await post(alice, { kind: 'hold', input: { n: 7 } });
    const read = await t.gql(
      `query($id: ID!) { task(id: $id) { id kind input status } }`,
      { id: res.body.taskId },
      alice,
    );
    expect(read.data.task).toEqual({
      id: res.body.taskId,
      kind: 'hold',
      input: { n: 7 },
      status: 'WORKING',
    });
  });

  it('answers 422 BAD_USER_INPUT for a bad body, an unknown kind or input that fails the schema', async () => {
    for (const body of [
      [1, 2],
      'null',
      '"text"',
      {},
      { kind: 42 },
      { kind: 'no-such-kind' },
      { kind: 'sleep', input: { ms: 'soon' } },
      { kind: 'sleep' },
      { kind: 'sleep', input: { ms: 1 }, ttlMs: '60000' },
      { kind: 'sleep', input: { ms: 1 }, ttlMs: 1.5 },
    ]) {
      const res = await post(alice, body);
      expectProblem(res, 422, 'BAD_USER_INPUT');
    }
  });

  it('answers 400 for a body that is not JSON', async () => {
    const res = await post(alice, '{"kind": "sleep",');
    expectProblem(res, 400, 'BAD_USER_INPUT');
    expect(res.body.title).toBe('Bad Request');
  });
});

describe('GET /v1/jobs/{id}', () => {
  it('answers 200 with the handle and Retry-After while working', async () => {
    const started = await post(alice, { kind: 'hold' });
    const res = await call('GET', `/v1/jobs/${started.body.taskId}`, { token: alice });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(Object.keys(res.body).sort()).toEqual(HANDLE_KEYS);
    expect(res.body).toMatchObject({
      taskId: started.body.taskId,
      status: 'working',
      createdAt: started.body.createdAt,
    });
    expect(res.headers.get('retry-after')).toBe('3');
  });

  it('adds result once completed, and sends no Retry-After', async () => {
    const started = await post(alice, { kind: 'sleep', input: { ms: 0 } });
    const res = await untilStatus(alice, started.body.taskId, 'completed');
    expect(res.status).toBe(200);
    expect(res.headers.get('retry-after')).toBeNull();
    expect(Object.keys(res.body).sort()).toEqual([...HANDLE_KEYS, 'result'].sort());
    expect(res.body.result).toEqual({ sleptMs: expect.any(Number) });
  });

  it('adds error once failed, and sends no Retry-After', async () => {
    const started = await post(alice, { kind: 'sleep', input: { ms: 0, fail: 'disk full' } });
    const res = await untilStatus(alice, started.body.taskId, 'failed');
    expect(res.headers.get('retry-after')).toBeNull();
    expect(res.body.error).toEqual({ code: 'HANDLER_ERROR', message: 'disk full' });
    expect(res.body).not.toHaveProperty('result');
  });

  it('adds inputRequest while input_required, with a Retry-After', async () => {
    const started = await post(alice, { kind: 'approval', input: { question: 'Ship it?' } });
    const res = await untilStatus(alice, started.body.taskId, 'input_required');
    expect(res.body.inputRequest).toMatchObject({
      key: 'decision',
      message: 'Ship it?',
      schema: { type: 'object', required: ['approved'] },
    });
    expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(res.headers.get('retry-after')).toMatch(/^\d+$/);
  });

  it("shows an admin another principal's handle without its payloads", async () => {
    const started = await post(alice, { kind: 'sleep', input: { ms: 0 } });
    await untilStatus(alice, started.body.taskId, 'completed');
    const root = await t.token('root', ADMIN_SCOPES);
    const res = await call('GET', `/v1/jobs/${started.body.taskId}`, { token: root });
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('completed');
    expect(res.body).not.toHaveProperty('result');
  });
});

describe('DELETE /v1/jobs/{id}', () => {
  it('answers 200 with the cancelled handle, and again 200 unchanged', async () => {
    const started = await post(alice, { kind: 'hold' });
    const res = await call('DELETE', `/v1/jobs/${started.body.taskId}`, { token: alice });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      resultType: 'task',
      taskId: started.body.taskId,
      status: 'cancelled',
    });
    expect(res.headers.get('retry-after')).toBeNull();
    const again = await call('DELETE', `/v1/jobs/${started.body.taskId}`, { token: alice });
    expect(again.status).toBe(200);
    expect(again.body).toEqual(res.body);
    expect(
      (await call('GET', `/v1/jobs/${started.body.taskId}`, { token: alice })).body.status,
    ).toBe('cancelled');
  });

  it('answers 409 TASK_TERMINAL for a completed task', async () => {
    const started = await post(alice, { kind: 'sleep', input: { ms: 0 } });
    await untilStatus(alice, started.body.taskId, 'completed');
    const res = await call('DELETE', `/v1/jobs/${started.body.taskId}`, { token: alice });
    expectProblem(res, 409, 'TASK_TERMINAL');
    expect(res.body.title).toBe('Conflict');
    expect(
      (await call('GET', `/v1/jobs/${started.body.taskId}`, { token: alice })).body.status,
    ).toBe('completed');
  });

  it('answers 409 TASK_TERMINAL for a failed task', async () => {
    const started = await post(alice, { kind: 'sleep', input: { ms: 0, fail: 'no' } });
    await untilStatus(alice, started.body.taskId, 'failed');
    expectProblem(
      await call('DELETE', `/v1/jobs/${started.body.taskId}`, { token: alice }),
      409,
      'TASK_TERMINAL',
    );
  });
});

describe('POST /v1/jobs/{id}/input', () => {
  it('answers 200 with the handle, and the task completes with the answer', async () => {
    const started = await post(alice, { kind: 'approval', input: { question: 'Deploy?' } });
    const id = started.body.taskId;
    await untilStatus(alice, id, 'input_required');
    const res = await call('POST', `/v1/jobs/${id}/input`, {
      token: alice,
      body: { key: 'decision', value: { approved: true, comment: 'go' } },
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ resultType: 'task', taskId: id, status: 'working' });
    expect(res.headers.get('retry-after')).toMatch(/^\d+$/);
    const done = await untilStatus(alice, id, 'completed');
    expect(done.body.result).toEqual({ approved: true, comment: 'go' });
    // Answering again, now that it is over: 409.
    expectProblem(
      await call('POST', `/v1/jobs/${id}/input`, {
        token: alice,
        body: { key: 'decision', value: { approved: false } },
      }),
      409,
      'TASK_TERMINAL',
    );
  });

  it('answers 422 for a value that fails the schema or a missing value, 409 NOT_AWAITING_INPUT for another key', async () => {
    const started = await post(alice, { kind: 'approval', input: { question: 'Delete prod?' } });
    const id = started.body.taskId;
    await untilStatus(alice, id, 'input_required');
    expectProblem(
      await call('POST', `/v1/jobs/${id}/input`, {
        token: alice,
        body: { key: 'decision', value: { approved: 'yes' } },
      }),
      422,
      'BAD_USER_INPUT',
    );
    expectProblem(
      await call('POST', `/v1/jobs/${id}/input`, { token: alice, body: { key: 'decision' } }),
      422,
      'BAD_USER_INPUT',
    );
    expectProblem(
      await call('POST', `/v1/jobs/${id}/input`, { token: alice, body: { value: true } }),
      422,
      'BAD_USER_INPUT',
    );
    expectProblem(
      await call('POST', `/v1/jobs/${id}/input`, { token: alice, body: '{' }),
      400,
      'BAD_USER_INPUT',
    );
    expectProblem(
      await call('POST', `/v1/jobs/${id}/input`, {
        token: alice,
        body: { key: 'other', value: 1 },
      }),
      409,
      'NOT_AWAITING_INPUT',
    );
    expect((await call('GET', `/v1/jobs/${id}`, { token: alice })).body.status).toBe(
      'input_required',
    );
  });

  it('answers 409 NOT_AWAITING_INPUT for a task that asks nothing', async () => {
    const started = await post(alice, { kind: 'hold' });
    expectProblem(
      await call('POST', `/v1/jobs/${started.body.taskId}/input`, {
        token: alice,
        body: { key: 'decision', value: 1 },
      }),
      409,
      'NOT_AWAITING_INPUT',
    );
  });
});

describe('GET /v1/jobs', () => {
  it('lists the caller’s tasks newest first, in cursor pages that never overlap', async () => {
    const lister = await t.token('lister');
    const started: Array<{ taskId: string; createdAt: string }> = [];
    for (let i = 0; i < 5; i++)
      started.push((await post(lister, { kind: 'hold', input: { i } })).body);
    await post(bob, { kind: 'hold' }); // someone else's, never listed
    // Newest first; tasks created in the same millisecond are ordered by id, descending.
    const expected = [...started]
      .sort((a, b) =>
        a.createdAt === b.createdAt
          ? a.taskId < b.taskId
            ? 1
            : -1
          : a.createdAt < b.createdAt
            ? 1
            : -1,
      )
      .map((h) => h.taskId);

    const seen: string[] = [];
    let path = '/v1/jobs?limit=2';
    const pageSizes: number[] = [];
    for (let page = 0; page < 10; page++) {
      const res = await call('GET', path, { token: lister });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      for (const handle of res.body.tasks) {
        expect(handle).toMatchObject({ resultType: 'task', status: 'working' });
        seen.push(handle.taskId);
      }
      pageSizes.push(res.body.tasks.length);
      if (!res.body.nextCursor) {
        expect(res.headers.get('link')).toBeNull();
        break;
      }
      expect(res.headers.get('link')).toBe(
        `</v1/jobs?limit=2&cursor=${res.body.nextCursor}>; rel="next"`,
      );
      path = `/v1/jobs?limit=2&cursor=${encodeURIComponent(res.body.nextCursor)}`;
    }
    expect(pageSizes).toEqual([2, 2, 1]);
    expect(seen).toEqual(expected);
  });

  it('filters by status, and refuses an unknown status, a bad limit or a bad cursor with 422', async () => {
    const filterer = await t.token('filterer');
    const a = (await post(filterer, { kind: 'hold' })).body.taskId;
    const b = (await post(filterer, { kind: 'hold' })).body.taskId;
    await call('DELETE', `/v1/jobs/${a}`, { token: filterer });
    const cancelled = await call('GET', '/v1/jobs?status=cancelled', { token: filterer });
    expect(cancelled.body.tasks.map((h: { taskId: string }) => h.taskId)).toEqual([a]);
    const both = await call('GET', '/v1/jobs?status=working,cancelled', { token: filterer });
    expect(both.body.tasks.map((h: { taskId: string }) => h.taskId).sort()).toEqual([a, b].sort());
    expect(both.body.nextCursor).toBeNull();
    expectProblem(
      await call('GET', '/v1/jobs?status=sleeping', { token: filterer }),
      422,
      'BAD_USER_INPUT',
    );
    expectProblem(
      await call('GET', '/v1/jobs?limit=0', { token: filterer }),
      422,
      'BAD_USER_INPUT',
    );
    expectProblem(
      await call('GET', '/v1/jobs?limit=101', { token: filterer }),
      422,
      'BAD_USER_INPUT',
    );
    expectProblem(
      await call('GET', '/v1/jobs?limit=ten', { token: filterer }),
      422,
      'BAD_USER_INPUT',
    );
    expectProblem(
      await call('GET', '/v1/jobs?cursor=not-a-cursor', { token: filterer }),
      422,
      'BAD_USER_INPUT',
    );
  });
});

describe('authorization', () => {
  it('answers 401 with WWW-Authenticate: Bearer on every route without a token', async () => {
    for (const [method, path] of [
      ['POST', '/v1/jobs'],
      ['GET', '/v1/jobs'],
      ['GET', `/v1/jobs/${UNKNOWN_ID}`],
      ['DELETE', `/v1/jobs/${UNKNOWN_ID}`],
      ['POST', `/v1/jobs/${UNKNOWN_ID}/input`],
    ] as const) {
      const res = await call(method, path, {
        body: method === 'POST' ? { kind: 'hold' } : undefined,
      });
      expectProblem(res, 401, 'UNAUTHENTICATED');
      expect(res.body.title).toBe('Unauthorized');
      expect(res.headers.get('www-authenticate')).toBe('Bearer');
    }
  });

  it('answers 401 for a forged or malformed token, saying invalid_token', async () => {
    const forged = `${alice.slice(0, -4)}AAAA`;
    for (const token of [forged, 'not.a.jwt']) {
      const res = await call('GET', '/v1/jobs', { token });
      expectProblem(res, 401, 'UNAUTHENTICATED');
      expect(res.headers.get('www-authenticate')).toMatch(/^Bearer error="invalid_token"/);
    }
    const res = await call('GET', '/v1/jobs', { headers: { authorization: 'Basic YWxpY2U6cHc=' } });
    expect(res.status).toBe(401);
  });

  it('answers 403 FORBIDDEN when the token lacks the scope, naming it', async () => {
    const readOnly = await t.token('alice', ['tasks:read']);
    const writeOnly = await t.token('alice', ['tasks:write']);
    const task = (await post(alice, { kind: 'hold' })).body.taskId;
    for (const [method, path, token, scope] of [
      ['POST', '/v1/jobs', readOnly, 'tasks:write'],
      ['DELETE', `/v1/jobs/${task}`, readOnly, 'tasks:write'],
      ['POST', `/v1/jobs/${task}/input`, readOnly, 'tasks:write'],
      ['GET', '/v1/jobs', writeOnly, 'tasks:read'],
      ['GET', `/v1/jobs/${task}`, writeOnly, 'tasks:read'],
    ] as const) {
      const res = await call(method, path, {
        token,
        body: method === 'POST' ? { kind: 'hold', key: 'k', value: 1 } : undefined,
      });
      expectProblem(res, 403, 'FORBIDDEN');
      expect(res.body.title).toBe('Forbidden');
      expect(res.headers.get('www-authenticate')).toBe(
        `Bearer error="insufficient_scope", scope="${scope}"`,
      );
    }
    // Nothing was cancelled.
    expect((await call('GET', `/v1/jobs/${task}`, { token: alice })).body.status).toBe('working');
  });

  it("answers 404 for another principal's task exactly as for an unknown or malformed id", async () => {
    const bobsTask = (await post(bob, { kind: 'hold' })).body.taskId;
    for (const [method, suffix, body] of [
      ['GET', '', undefined],
      ['DELETE', '', undefined],
      ['POST', '/input', { key: 'decision', value: { approved: true } }],
    ] as const) {
      const foreign = await call(method, `/v1/jobs/${bobsTask}${suffix}`, { token: alice, body });
      const unknown = await call(method, `/v1/jobs/${UNKNOWN_ID}${suffix}`, { token: alice, body });
      const malformed = await call(method, `/v1/jobs/not-a-task-id${suffix}`, {
        token: alice,
        body,
      });
      expectProblem(foreign, 404, 'NOT_FOUND');
      expect(foreign.body.title).toBe('Not Found');
      expect(foreign.text).toBe(unknown.text);
      expect(foreign.text).toBe(malformed.text);
      expect([...foreign.headers.keys()].sort()).toEqual([...unknown.headers.keys()].sort());
    }
    // Bob's task was not touched by alice's attempts.
    expect((await call('GET', `/v1/jobs/${bobsTask}`, { token: bob })).body.status).toBe('working');
  });

  it("keeps another principal's tasks out of the list", async () => {
    const bobsTask = (await post(bob, { kind: 'hold' })).body.taskId;
    const res = await call('GET', '/v1/jobs?limit=100', { token: alice });
    expect(res.body.tasks.map((h: { taskId: string }) => h.taskId)).not.toContain(bobsTask);
  });
});

describe('routing', () => {
  it('answers 405 with Allow for a method a route does not take', async () => {
    const put = await call('PUT', '/v1/jobs', { token: alice, body: {} });
    expectProblem(put, 405, 'METHOD_NOT_ALLOWED');
    expect(put.headers.get('allow')).toBe('GET, POST');
    const patch = await call('PATCH', `/v1/jobs/${UNKNOWN_ID}`, { token: alice, body: {} });
    expect(patch.status).toBe(405);
    expect(patch.headers.get('allow')).toBe('GET, DELETE');
    const getInput = await call('GET', `/v1/jobs/${UNKNOWN_ID}/input`, { token: alice });
    expect(getInput.status).toBe(405);
    expect(getInput.headers.get('allow')).toBe('POST');
  });
});
