import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, startTestApp, type TestApp } from '../../helpers/app.js';

/**
 * Signals (DESIGN §16) through the doors users use: GraphQL `signalTask` for the owner, and a
 * signal URL (`ctx.signalUrl`) POSTed without a token. The built-in `pipeline` waits for them.
 */

const SIGNAL = `mutation($id: ID!, $name: String!, $payload: JSON) {
  signalTask(id: $id, name: $name, payload: $payload) { id status version }
}`;
const START = `mutation($input: StartTaskInput!) { startTask(input: $input) { id } }`;
const GET = `query($id: ID!) { task(id: $id) { status result runAt statusMessage } }`;
const ALICE = { id: 'alice', admin: false };

let t: TestApp;
let alice: string;
let bob: string;
beforeAll(async () => {
  t = await startTestApp({});
  [alice, bob] = await Promise.all([t.token('alice'), t.token('bob')]);
});
afterAll(() => t?.stop());

async function start(input: Record<string, unknown>): Promise<string> {
  const res = await t.gql(START, { input: { kind: 'pipeline', input } }, alice);
  expect(res.errors).toBeUndefined();
  return res.data.startTask.id;
}

const signal = (id: string, name: string, payload: unknown, token = alice) =>
  t.gql(SIGNAL, { id, name, payload }, token);

const finished = (id: string) =>
  eventually(async () => {
    const res = await t.gql(GET, { id }, alice);
    const task = res.data?.task;
    return task && task.status !== 'WORKING' ? task : undefined;
  });

/** The signal wait's journal entry once the task is suspended on it (its URL minted first). */
const suspendedOn = (id: string, name: string) =>
  eventually(async () => {
    const steps = await t.app.tasks.journals.steps(ALICE, id);
    const step = steps?.find((s) => s.name === name);
    const task = await t.app.tasks.get(ALICE, id);
    return step?.state === 'WAITING_SIGNAL' && step.signalUrl && task?.statusMessage
      ? step
      : undefined;
  });

const postUrl = (url: string, body: unknown) =>
  fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });

describe('signalTask', () => {
  it('keeps a signal sent before the wait; the same payload again answers as the first, another is SIGNAL_ALREADY_SENT', async () => {
    // Stage 1 runs for a while: the signal arrives before the handler reaches its wait.
    const id = await start({ stages: 2, stageMs: 500, signal: 'go' });
    const first = await signal(id, 'go', { n: 1 });
    expect(first.errors).toBeUndefined();
    expect(
      await t.app.db.kysely
        .selectFrom('task_steps')
        .select('name')
        .where('task_id', '=', id)
        .where('name', '=', 'go')
        .where('state', '=', 'WAITING_SIGNAL')
        .executeTakeFirst(),
    ).toBeUndefined();
    const again = await signal(id, 'go', { n: 1 });
    expect(again.errors).toBeUndefined();
    const other = await signal(id, 'go', { n: 2 });
    expect(other.errors?.[0]?.extensions?.code).toBe('SIGNAL_ALREADY_SENT');
    const done = await finished(id);
    expect(done).toMatchObject({ status: 'COMPLETED', result: { signal: { n: 1 } } });
  });

  it('wakes a task suspended on the signal, which meanwhile holds no slot nor lease (runAt null)', async () => {
    const id = await start({ stages: 1, signal: 'approve' });
    await suspendedOn(id, 'approve');
    const waiting = await t.gql(GET, { id }, alice);
    expect(waiting.data.task).toMatchObject({ status: 'WORKING', runAt: null });
    expect(waiting.data.task.statusMessage).toContain('approve');
    const stored = await t.app.db.kysely
      .selectFrom('tasks')
      .select(['worker_id', 'hold'])
      .where('id', '=', id)
      .executeTakeFirst();
    expect(stored).toEqual({ worker_id: null, hold: 'wait' });
    // The run lets go of the task once its suspension has committed, a moment after the row.
    await eventually(async () => (t.app.runner?.holds(id) ? undefined : true));
    expect((await signal(id, 'approve', { ok: true })).errors).toBeUndefined();
    expect(await finished(id)).toMatchObject({
      status: 'COMPLETED',
      result: { signal: { ok: true } },
    });
  });

  it("refuses another principal's task as unknown, and a bad name", async () => {
    const id = await start({ stages: 1, signal: 'x' });
    expect((await signal(id, 'x', 1, bob)).errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
    expect((await signal(id, '', 1)).errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
    await t.app.tasks.cancel(ALICE, id);
  });

  it('resolves null once the timeout passed', async () => {
    const id = await start({ stages: 1, signal: 'late', signalTimeoutMs: 200 });
    expect(await finished(id)).toMatchObject({ status: 'COMPLETED', result: { signal: null } });
  });
});

describe('signal URLs', () => {
  it('take a payload without a token; useless for another task, used up, after the end, or guessed: the same 404', async () => {
    const id = await start({ stages: 1, signal: 'paid' });
    const other = await start({ stages: 1, signal: 'paid' });
    const step = await suspendedOn(id, 'paid');
    const otherStep = await suspendedOn(other, 'paid');
    const url = step.signalUrl!;
    expect(url).toMatch(new RegExp(`^${t.url}/v1/signals/[A-Za-z0-9_-]{43}$`));
    expect(otherStep.signalUrl).not.toBe(url);

    const sent = await postUrl(url, { amount: 5 });
    expect(sent.status).toBe(202);
    expect(await sent.json()).toEqual({ received: true, first: true });
    expect(await finished(id)).toMatchObject({ result: { signal: { amount: 5 } } });

    // The other task still waits for its own signal.
    expect(await t.app.tasks.get(ALICE, other)).toMatchObject({ status: 'working' });
    const answers = await Promise.all([
      postUrl(url, { amount: 6 }), // used up, and its task ended
      postUrl(url, { amount: 5 }), // its task ended
      postUrl(`${t.url}/v1/signals/${'A'.repeat(43)}`, { amount: 5 }), // guessed
      postUrl(`${t.url}/v1/signals/short`, {}),
    ]);
    const bodies = await Promise.all(
      answers.map(async (r) => [r.status, ((await r.json()) as { code: string }).code]),
    );
    expect(bodies).toEqual(Array(4).fill([404, 'NOT_FOUND']));
    await t.app.tasks.cancel(ALICE, other);
    expect((await postUrl(otherStep.signalUrl!, {})).status).toBe(404);
  });
});
