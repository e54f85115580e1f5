import { TaskState } from '@a2a-js/sdk';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineTaskKind } from '../../src/tasks/kinds.js';
import { a2aClient, answerRequest, startRequest } from '../helpers/a2a.js';
import { eventually, startTestApp, type TestApp } from '../helpers/app.js';
import { isFinal, pollUntil, v2Result, WITH_TASKS } from '../helpers/mcp-v2.js';
import { ANSWER_TASK, GET_TASK, START_TASK } from '../helpers/operations.js';
import { restClient } from '../helpers/rest.js';
import { codeOf } from '../helpers/runner-kinds.js';

/**
 * Several questions outstanding at once (DESIGN §4 "Human in the loop", §9b `inputRequests`),
 * on both backends: `ctx.requestInputs` asks them together, each answer is checked against its
 * own question and stored as it comes, and the handler resumes once every one is answered —
 * also when the worker that asked was lost in between.
 */

const NAME = {
  type: 'object',
  properties: { name: { type: 'string', minLength: 1 } },
  required: ['name'],
};
const AGE = { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] };

/** Attempts that reached the handler, by task: a re-run must not ask again. */
const runs = new Map<string, number[]>();

const survey = defineTaskKind<Record<string, never>, unknown>({
  name: 'survey',
  description: 'test: asks for a name and an age at once',
  inputSchema: { type: 'object' },
  pollIntervalMs: 50,
  async run({ taskId, attempt, requestInputs }) {
    runs.set(taskId, [...(runs.get(taskId) ?? []), attempt]);
    const answers = await requestInputs<{ name: { name: string }; age: { n: number } }>([
      { key: 'name', message: 'Your name?', schema: NAME },
      { key: 'age', message: 'Your age?', schema: AGE },
    ]);
    return { name: answers.name.name, age: answers.age.n, attempt };
  },
});

/** `requestInputs` with one question, and with none, behaves like `requestInput`. */
const edges = defineTaskKind<Record<string, never>, unknown>({
  name: 'edges',
  description: 'test: asks nothing, then one question through requestInputs',
  inputSchema: { type: 'object' },
  async run({ requestInputs }) {
    const none = await requestInputs([]);
    const one = await requestInputs([{ key: 'only', message: 'Anything?' }]);
    return { none, one };
  },
});

const INPUT_REQUESTS = `query($id: ID!) { task(id: $id) { status version inputRequest { key } inputRequests { key message schema } } }`;

let t: TestApp;
let alice: string;
let bob: string;
beforeAll(async () => {
  t = await startTestApp({
    kinds: [survey, edges],
    env: { TASK_LEASE_MS: '1500' },
  });
  [alice, bob] = await Promise.all([t.token('alice'), t.token('bob')]);
});
afterAll(() => t?.stop());

async function start(kind: string): Promise<string> {
  const started = await t.gql(START_TASK, { input: { kind, input: {} } }, alice);
  expect(started.errors).toBeUndefined();
  return started.data.startTask.id;
}

const questions = async (id: string, token = alice) =>
  (await t.gql(INPUT_REQUESTS, { id }, token)).data.task;

const waiting = (id: string) =>
  eventually(async () => {
    const task = await questions(id);
    return task.status === 'INPUT_REQUIRED' ? task : undefined;
  });

const answer = (id: string, key: string, value: unknown) =>
  t.gql(ANSWER_TASK, { id, key, value }, alice);

const finished = (id: string) =>
  eventually(async () => {
    const task = (await t.gql(GET_TASK, { id }, alice)).data.task;
    return ['COMPLETED', 'FAILED', 'CANCELLED'].includes(task.status) ? task : undefined;
  });

describe('a task with several questions outstanding', () => {
  it('waits for every answer, keeps a question whose answer fails its schema, then resumes with all', async () => {
    const id = await start('survey');
    const asked = await waiting(id);
    expect(asked.inputRequest).toEqual({ key: 'name' });
    expect(asked.inputRequests).toEqual([
      { key: 'name', message: 'Your name?', schema: NAME },
      { key: 'age', message: 'Your age?', schema: AGE },
    ]);
    // Owner only, like inputRequest.
    expect(await questions(id, bob)).toBeNull();

    // A value failing its own question's schema is not stored: both stay outstanding.
    expect(codeOf(await answer(id, 'age', { n: 'old' }))).toBe('BAD_USER_INPUT');
    expect(codeOf(await answer(id, 'other', { n: 1 }))).toBe('NOT_AWAITING_INPUT');
    expect((await questions(id)).inputRequests.map((q: any) => q.key)).toEqual(['name', 'age']);

    // The second question answered first: still INPUT_REQUIRED, only the first left.
    const partial = await answer(id, 'age', { n: 42 });
    expect(partial.errors).toBeUndefined();
    expect(partial.data.provideTaskInput).toMatchObject({
      status: 'INPUT_REQUIRED',
      inputRequest: { key: 'name', message: 'Your name?' },
    });
    const left = await questions(id);
    expect(left).toMatchObject({ status: 'INPUT_REQUIRED', inputRequest: { key: 'name' } });
    expect(left.inputRequests.map((q: any) => q.key)).toEqual(['name']);
    // An answered key is answered: not asked any more.
    const again = await answer(id, 'age', { n: 43 });
    expect(codeOf(again)).toBe('NOT_AWAITING_INPUT');
    expect(again.errors?.[0]?.message).toContain('"name"');

    // REST shows the same questions.
    const rest = await restClient(t.url)('GET', `/v1/jobs/${id}`, { token: alice });
    expect(rest.body).toMatchObject({
      status: 'input_required',
      inputRequest: { key: 'name' },
      inputRequests: [{ key: 'name', message: 'Your name?' }],
    });

    const last = await answer(id, 'name', { name: 'Ada' });
    expect(last.data.provideTaskInput).toMatchObject({ status: 'WORKING', inputRequest: null });
    expect(await finished(id)).toMatchObject({
      status: 'COMPLETED',
      result: { name: 'Ada', age: 42, attempt: 1 },
    });
    expect(runs.get(id)).toEqual([1]);
    expect(codeOf(await answer(id, 'name', { name: 'Bob' }))).toBe('TASK_TERMINAL');
  });

  it('takes answers to different questions sent at the same moment', async () => {
    const id = await start('survey');
    await waiting(id);
    const [name, age] = await Promise.all([
      answer(id, 'name', { name: 'Grace' }),
      answer(id, 'age', { n: 85 }),
    ]);
    expect(name.errors).toBeUndefined();
    expect(age.errors).toBeUndefined();
    // Whichever came second saw the first: exactly one of them resumed the task.
    expect([name, age].map((r) => r.data.provideTaskInput.status).sort()).toEqual([
      'INPUT_REQUIRED',
      'WORKING',
    ]);
    expect(await finished(id)).toMatchObject({
      status: 'COMPLETED',
      result: { name: 'Grace', age: 85 },
    });
  });

  it('keeps a stored answer when the worker that asked is lost, and the re-run gets both at once', async () => {
    const id = await start('survey');
    await waiting(id);
    expect((await answer(id, 'name', { name: 'Lin' })).data.provideTaskInput.status).toBe(
      'INPUT_REQUIRED',
    );
    // The worker is lost: its lease is someone else's and lapsed, so the handler is stopped
    // at the next heartbeat and this process lets the task go.
    const db = t.app.db.kysely;
    await sql`update tasks set worker_id = 'lost', lease_expires_at = now() - interval '1 second'
              where id = ${id}::uuid`.execute(db);
    await eventually(async () => !t.app.runner!.holds(id) || undefined);
    const stored = await sql<{ status: string; answers: unknown }>`
      select status, answers from tasks where id = ${id}::uuid`.execute(db);
    expect(stored.rows[0]).toEqual({
      status: 'input_required',
      answers: { name: { name: 'Lin' } },
    });
    expect((await questions(id)).inputRequests.map((q: any) => q.key)).toEqual(['age']);

    // The last answer makes it claimable; the re-run finds both answers and asks nothing.
    expect((await answer(id, 'age', { n: 30 })).data.provideTaskInput.status).toBe('WORKING');
    expect(await finished(id)).toMatchObject({
      status: 'COMPLETED',
      result: { name: 'Lin', age: 30, attempt: 2 },
    });
    expect(runs.get(id)).toEqual([1, 2]);
  });

  it('asks nothing for an empty list and one question for a list of one', async () => {
    const id = await start('edges');
    const asked = await waiting(id);
    expect(asked.inputRequests).toEqual([{ key: 'only', message: 'Anything?', schema: null }]);
    await answer(id, 'only', 'yes');
    expect(await finished(id)).toMatchObject({
      status: 'COMPLETED',
      result: { none: {}, one: { only: 'yes' } },
    });
  });
});

describe('over MCP 2026-07-28', () => {
  const tasksCall = (method: string, params: Record<string, unknown>) =>
    v2Result(t.url, alice, method, params, { capabilities: WITH_TASKS });

  it('lists every outstanding question in inputRequests and takes their answers in one tasks/update', async () => {
    const { taskId } = await v2Result(
      t.url,
      alice,
      'tools/call',
      { name: 'survey', arguments: {} },
      { capabilities: WITH_TASKS },
    );
    const asked = await pollUntil(t.url, alice, taskId, (task) => task.status === 'input_required');
    expect(Object.keys(asked.inputRequests)).toEqual(['name', 'age']);
    expect(asked.inputRequests.age).toEqual({
      method: 'elicitation/create',
      params: { mode: 'form', message: 'Your age?', requestedSchema: AGE },
    });

    // One good answer, one failing its schema: the good one is stored, the other kept.
    await tasksCall('tasks/update', {
      taskId,
      inputResponses: {
        name: { action: 'accept', content: { name: 'Kay' } },
        age: { action: 'accept', content: { n: 'x' } },
      },
    });
    const partial = await tasksCall('tasks/get', { taskId });
    expect(partial.status).toBe('input_required');
    expect(Object.keys(partial.inputRequests)).toEqual(['age']);

    // Declined, unknown and already answered keys store nothing.
    await tasksCall('tasks/update', {
      taskId,
      inputResponses: {
        age: { action: 'decline' },
        name: { action: 'accept', content: { name: 'Other' } },
        nope: { action: 'accept', content: {} },
      },
    });
    expect(Object.keys((await tasksCall('tasks/get', { taskId })).inputRequests)).toEqual(['age']);

    await tasksCall('tasks/update', {
      taskId,
      inputResponses: { age: { action: 'accept', content: { n: 7 } } },
    });
    const done = await pollUntil(t.url, alice, taskId, isFinal);
    expect(done.status).toBe('completed');
    expect(done.result.structuredContent).toEqual({ name: 'Kay', age: 7, attempt: 1 });
  });

  it('resumes a task whose questions are all answered in one tasks/update', async () => {
    const { taskId } = await v2Result(
      t.url,
      alice,
      'tools/call',
      { name: 'survey', arguments: {} },
      { capabilities: WITH_TASKS },
    );
    await pollUntil(t.url, alice, taskId, (task) => task.status === 'input_required');
    await tasksCall('tasks/update', {
      taskId,
      inputResponses: {
        age: { action: 'accept', content: { n: 1 } },
        name: { action: 'accept', content: { name: 'Both' } },
      },
    });
    const done = await pollUntil(t.url, alice, taskId, isFinal);
    expect(done.result.structuredContent).toEqual({ name: 'Both', age: 1, attempt: 1 });
  });
});

describe('over A2A', () => {
  const dataOf = (task: any) =>
    task.status.message.parts.find((part: any) => part.content?.$case === 'data')?.content.value;

  it('shows the first outstanding question, and the next once it is answered', async () => {
    const client = await a2aClient(t.url, alice);
    const asked: any = await client.sendMessage(
      startRequest('survey', {}, { returnImmediately: false }),
    );
    expect(asked.status.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    expect(dataOf(asked)).toEqual({ key: 'name', schema: NAME });
    const next: any = await client.sendMessage(answerRequest(asked.id, { name: 'Eve' }));
    expect(next.status.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    expect(dataOf(next)).toEqual({ key: 'age', schema: AGE });
    const done: any = await client.sendMessage(
      answerRequest(asked.id, { n: 5 }, { returnImmediately: false }),
    );
    expect(done.status.state).toBe(TaskState.TASK_STATE_COMPLETED);
  });
});
