import { describe, expect, it } from 'vitest';
import {
  alice,
  bob,
  call,
  expectProblem,
  post,
  t,
  untilStatus,
  useRestApp,
} from '../../helpers/rest-jobs.js';

useRestApp();

/** REST (DESIGN §6): answering a job's question, and listing jobs. */

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
