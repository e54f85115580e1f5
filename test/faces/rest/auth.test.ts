import { describe, expect, it } from 'vitest';
import {
  alice,
  bob,
  call,
  expectProblem,
  post,
  t,
  UNKNOWN_ID,
  useRestApp,
} from '../../helpers/rest-jobs.js';

useRestApp();

/** REST (DESIGN §6): who may call which route, and routing itself. */

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
