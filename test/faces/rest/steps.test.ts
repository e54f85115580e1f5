import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_SCOPES, eventually, startTestApp, type TestApp } from '../../helpers/app.js';
import { restClient } from '../../helpers/rest.js';

/**
 * DESIGN §16 on `/v1/jobs`: `parentId` in the handle, `steps` on `GET /v1/jobs/{id}`,
 * `?parentId=`, `POST /v1/jobs/{id}/signals/{name}` and `retry` with `fromStep`, through the
 * built-in `pipeline` over real HTTP.
 */

let t: TestApp;
let api: ReturnType<typeof restClient>;
let alice: string;
let bob: string;
let root: string;
beforeAll(async () => {
  t = await startTestApp();
  api = restClient(t.url);
  [alice, bob, root] = await Promise.all([
    t.token('alice'),
    t.token('bob'),
    t.token('root', ADMIN_SCOPES),
  ]);
});
afterAll(() => t?.stop());

async function start(input: Record<string, unknown>, extra: Record<string, unknown> = {}) {
  const res = await api('POST', '/v1/jobs', {
    token: alice,
    body: { kind: 'pipeline', input, ...extra },
  });
  expect(res.status).toBe(202);
  expect(res.body).not.toHaveProperty('parentId');
  return res.body.taskId as string;
}

const get = (id: string, token = alice) => api('GET', `/v1/jobs/${id}`, { token });
const signal = (id: string, name: string, body: unknown, token: string | null = alice) =>
  api('POST', `/v1/jobs/${id}/signals/${name}`, { token, body });

const waitingOn = (id: string, name: string) =>
  eventually(async () => {
    const { body } = await get(id);
    return body.steps.some((s: any) => s.name === name && s.state === 'waiting_signal')
      ? body
      : undefined;
  });

const ended = (id: string) =>
  eventually(async () => {
    const { body } = await get(id);
    return body.status === 'working' ? undefined : body;
  });

describe('GET /v1/jobs/{id} carries the journal', () => {
  it('for the owner with results and the signal URL, for an admin without; lists carry none', async () => {
    const id = await start({ stages: 1, signal: 'go' });
    const mine = await waitingOn(id, 'go');
    expect(mine.steps).toEqual([
      {
        name: 'stage-1',
        state: 'completed',
        attempts: 1,
        startedAt: expect.any(String),
        endedAt: expect.any(String),
        result: { stage: 1, attempt: 1, at: expect.any(String) },
      },
      {
        name: 'go',
        state: 'waiting_signal',
        attempts: 0,
        startedAt: expect.any(String),
        signalUrl: expect.stringMatching(new RegExp(`^${t.url}/v1/signals/`)),
      },
    ]);
    const admin = await get(id, root);
    expect(admin.status).toBe(200);
    expect(admin.body.steps.map((s: any) => Object.keys(s).sort())).toEqual([
      ['attempts', 'endedAt', 'name', 'startedAt', 'state'],
      ['attempts', 'name', 'startedAt', 'state'],
    ]);
    const list = await api('GET', '/v1/jobs?kind=pipeline', { token: alice });
    expect(list.body.tasks.find((task: any) => task.taskId === id)).not.toHaveProperty('steps');
    await api('DELETE', `/v1/jobs/${id}`, { token: alice });
  });
});

describe('POST /v1/jobs/{id}/signals/{name}', () => {
  it('202 with the handle, the same payload again 202, another 409; the task goes on with it', async () => {
    const id = await start({ stages: 1, signal: 'go', children: 2 });
    await waitingOn(id, 'go');
    // A signal it does not wait for (yet) is kept too: the task stays waiting meanwhile.
    expect((await signal(id, 'note', { n: 1 })).status).toBe(202);
    expect((await signal(id, 'note', { n: 1 })).status).toBe(202);
    const other = await signal(id, 'note', { n: 2 });
    expect(other.status).toBe(409);
    expect(other.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(other.body.code).toBe('SIGNAL_ALREADY_SENT');

    const sent = await signal(id, 'go', { amount: 12 });
    expect(sent.status).toBe(202);
    expect(sent.headers.get('location')).toBe(`/v1/jobs/${id}`);
    expect(sent.body).toMatchObject({ resultType: 'task', taskId: id });

    const done = await ended(id);
    expect(done).toMatchObject({ status: 'completed', result: { signal: { amount: 12 } } });
    const childIds = done.steps.filter((s: any) => s.childId).map((s: any) => s.childId);
    expect(childIds).toHaveLength(2);

    // The children name their parent, and the list finds them by it.
    const children = await api('GET', `/v1/jobs?parentId=${id}`, { token: alice });
    expect(children.status).toBe(200);
    expect(children.body.tasks.map((c: any) => c.taskId).sort()).toEqual(childIds.sort());
    for (const child of children.body.tasks) expect(child.parentId).toBe(id);
    expect((await get(childIds[0])).body.parentId).toBe(id);
    const bad = await api('GET', '/v1/jobs?parentId=nope', { token: alice });
    expect(bad.status).toBe(422);
    expect(bad.body.code).toBe('BAD_USER_INPUT');
    // Finished: a signal is too late.
    expect((await signal(id, 'late', 1)).body.code).toBe('TASK_TERMINAL');
  });

  it('404 for another principal’s task, an unknown one or a malformed id; 422 for a bad name; 405 for GET', async () => {
    const id = await start({ stages: 1, signal: 'go' });
    const answers = await Promise.all([
      signal(id, 'go', 1, bob),
      signal('5b8c1e2a-3f4d-4e6f-8a9b-0c1d2e3f4a5b', 'go', 1),
      signal('not-a-uuid', 'go', 1),
    ]);
    for (const answer of answers) {
      expect(answer.status).toBe(404);
      expect(answer.text).toBe(answers[0]!.text);
    }
    const long = await signal(id, 'x'.repeat(129), 1);
    expect(long.status).toBe(422);
    expect(long.body.code).toBe('BAD_USER_INPUT');
    expect((await signal(id, 'go', '{nope')).status).toBe(400);
    expect((await signal(id, 'go', 1, null)).status).toBe(401);
    const read = await api('GET', `/v1/jobs/${id}/signals/go`, { token: alice });
    expect(read.status).toBe(405);
    expect(read.headers.get('allow')).toBe('POST');
    // An encoded name is the name: "a b" is sent as a%20b.
    expect((await signal(id, 'a%20b', 1)).status).toBe(202);
    expect((await signal(id, 'a%20b', 2)).body.code).toBe('SIGNAL_ALREADY_SENT');
    // Bulk cancel takes parentId too (this one has no children).
    const cancelled = await api('POST', '/v1/jobs/cancel', {
      token: alice,
      body: { parentId: id },
    });
    expect(cancelled.body).toEqual({ matched: 0, cancelled: 0 });
    await api('DELETE', `/v1/jobs/${id}`, { token: alice });
  });
});

describe('POST /v1/jobs/{id}/retry with fromStep', () => {
  it('starts the new task with the journal before the step; a step not in it is 422', async () => {
    const id = await start(
      { stages: 3, failAtStage: 2, failTimes: 1 },
      { retry: { maxAttempts: 1 } },
    );
    const failed = await ended(id);
    expect(failed.status).toBe('failed');
    for (const body of [{ fromStep: 'stage-9' }, { fromStep: 2 }]) {
      const refused = await api('POST', `/v1/jobs/${id}/retry`, { token: alice, body });
      expect(refused.status).toBe(422);
      expect(refused.body.code).toBe('BAD_USER_INPUT');
    }
    const again = await api('POST', `/v1/jobs/${id}/retry`, {
      token: alice,
      body: { fromStep: 'stage-2' },
    });
    expect(again.status).toBe(202);
    expect(again.body.retryOf).toBe(id);
    const rerun = await ended(again.body.taskId);
    expect(rerun.steps[0]).toEqual(failed.steps[0]);
    expect(rerun.steps[1]).toMatchObject({ name: 'stage-2', state: 'failed' });
    // Without a body, as before: the whole task again.
    expect((await api('POST', `/v1/jobs/${id}/retry`, { token: alice })).status).toBe(202);
  });
});
