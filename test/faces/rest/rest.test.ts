import { describe, expect, it } from 'vitest';
import { ADMIN_SCOPES } from '../../helpers/app.js';
import {
  alice,
  call,
  expectProblem,
  HANDLE_KEYS,
  ISO,
  post,
  t,
  untilStatus,
  useRestApp,
} from '../../helpers/rest-jobs.js';

useRestApp();

/** REST (DESIGN §6): creating, reading and cancelling a job. */

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
    // The status monitor adds the task's journal (DESIGN §16), empty for a kind without steps.
    expect(Object.keys(res.body).sort()).toEqual([...HANDLE_KEYS, 'steps'].sort());
    expect(res.body.steps).toEqual([]);
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
    expect(Object.keys(res.body).sort()).toEqual([...HANDLE_KEYS, 'result', 'steps'].sort());
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
