import { expect } from 'vitest';
import {
  ANSWER,
  describeMatrix,
  done,
  expectHiddenLikeRandom,
  expectRestView,
  expectWaitingUnchanged,
  INPUT,
  type Op,
  type Outcome,
  refusal,
  STATUS_OF,
  startWaiting,
  t,
  useMatrixServer,
  waiting,
} from '../helpers/auth-matrix.js';

/**
 * The authorization matrix, REST face: the /v1/jobs routes against every kind of caller.
 * Cells and setup: helpers/auth-matrix.ts.
 */

useMatrixServer();

interface Rest {
  status: number;
  body: any;
  authenticate: string | null;
}

async function rest(
  method: string,
  path: string,
  token: string | null,
  body?: unknown,
): Promise<Rest> {
  const response = await fetch(`${t.url}${path}`, {
    method,
    headers: {
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return {
    status: response.status,
    body: await response.json(),
    authenticate: response.headers.get('www-authenticate'),
  };
}

function expectRestRefusal(response: Rest, outcome: 'F' | 'U'): void {
  expect(response.status).toBe(STATUS_OF[outcome]);
  expect(response.body).toMatchObject({ status: STATUS_OF[outcome], code: refusal(outcome) });
  if (outcome === 'U') expect(response.authenticate).toMatch(/^Bearer/);
}

// ---- one check per operation ----

const CHECKS: Partial<Record<Op, (outcome: Outcome, token: string | null) => Promise<void>>> = {
  async 'GET /v1/jobs/{id}'(outcome, token) {
    for (const fixture of [waiting, done]) {
      if (outcome === 'owner' || outcome === 'admin') {
        const read = await rest('GET', `/v1/jobs/${fixture.id}`, token);
        expect(read.status).toBe(200);
        expectRestView(read.body, fixture, outcome);
      } else if (outcome === 'hidden') {
        const read = await expectHiddenLikeRandom(fixture.id, (id) =>
          rest('GET', `/v1/jobs/${id}`, token),
        );
        expect(read).toMatchObject({ status: 404, body: { code: 'NOT_FOUND' } });
      } else {
        expectRestRefusal(await rest('GET', `/v1/jobs/${fixture.id}`, token), outcome as 'F' | 'U');
      }
    }
  },

  async 'GET /v1/jobs'(outcome, token) {
    const list = await rest('GET', '/v1/jobs?limit=100', token);
    if (outcome === 'F' || outcome === 'U') return expectRestRefusal(list, outcome);
    expect(list.status).toBe(200);
    const handles = new Map(list.body.tasks.map((handle: any) => [handle.taskId, handle]));
    if (outcome === 'owner') {
      for (const fixture of [waiting, done])
        expectRestView(handles.get(fixture.id), fixture, 'owner');
    } else {
      expect(handles.has(waiting.id)).toBe(false);
      expect(handles.has(done.id)).toBe(false);
    }
  },

  async 'POST /v1/jobs'(outcome, token) {
    const accepted = await rest('POST', '/v1/jobs', token, { kind: 'approval', input: INPUT });
    if (outcome !== 'ok') return expectRestRefusal(accepted, outcome as 'F' | 'U');
    expect(accepted.status).toBe(202);
    expect(accepted.body).toMatchObject({ resultType: 'task', status: 'working' });
  },

  async 'DELETE /v1/jobs/{id}'(outcome, token) {
    if (outcome === 'owner' || outcome === 'admin') {
      const id = await startWaiting();
      const cancelled = await rest('DELETE', `/v1/jobs/${id}`, token);
      expect(cancelled.status).toBe(200);
      expectRestView(
        cancelled.body,
        { id, status: 'CANCELLED' as never, inputRequest: null, result: null },
        outcome,
      );
      return;
    }
    if (outcome === 'hidden') {
      const answer = await expectHiddenLikeRandom(waiting.id, (id) =>
        rest('DELETE', `/v1/jobs/${id}`, token),
      );
      expect(answer).toMatchObject({ status: 404, body: { code: 'NOT_FOUND' } });
    } else {
      expectRestRefusal(
        await rest('DELETE', `/v1/jobs/${waiting.id}`, token),
        outcome as 'F' | 'U',
      );
    }
    await expectWaitingUnchanged();
  },

  async 'POST /v1/jobs/{id}/input'(outcome, token) {
    const body = { key: 'decision', value: ANSWER };
    if (outcome === 'owner') {
      const id = await startWaiting();
      const answered = await rest('POST', `/v1/jobs/${id}/input`, token, body);
      expect(answered.status).toBe(200);
      expect(answered.body).toMatchObject({ taskId: id });
      expect(answered.body.status).not.toBe('input_required');
      return;
    }
    if (outcome === 'hidden') {
      const answer = await expectHiddenLikeRandom(waiting.id, (id) =>
        rest('POST', `/v1/jobs/${id}/input`, token, body),
      );
      expect(answer).toMatchObject({ status: 404, body: { code: 'NOT_FOUND' } });
    } else {
      expectRestRefusal(
        await rest('POST', `/v1/jobs/${waiting.id}/input`, token, body),
        outcome as 'F' | 'U',
      );
    }
    await expectWaitingUnchanged();
  },
};

describeMatrix(CHECKS);
