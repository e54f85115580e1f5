import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineTaskKind, TaskFailedError } from '../../../src/tasks/kinds.js';
import { startTestApp, type TestApp } from '../../helpers/app.js';
import { hold } from '../../helpers/kinds.js';
import { isFinal, pollUntil, v2, v2Result, WITH_TASKS } from '../../helpers/mcp-v2.js';
import { restClient } from '../../helpers/rest.js';

const echo = defineTaskKind({
  name: 'echo',
  description: 'answers its value',
  inputSchema: { type: 'object', properties: { value: {} } },
  run: async ({ input }) => (input as { value?: unknown }).value,
});
const boom = defineTaskKind({
  name: 'boom',
  description: 'the tool reports a failure',
  inputSchema: { type: 'object' },
  run: async () => {
    throw new TaskFailedError('BROKEN', 'It broke.');
  },
});
const crash = defineTaskKind({
  name: 'crash',
  description: 'fails outside the tool',
  inputSchema: { type: 'object' },
  run: async () => {
    throw new TaskFailedError('INTERNAL_SERVER_ERROR', 'The server failed.');
  },
});
const strict = defineTaskKind({
  name: 'strict',
  description: 'only as a task',
  inputSchema: { type: 'object' },
  taskSupport: 'required',
  run: async () => 'ok',
});
const ask = defineTaskKind({
  name: 'ask',
  description: 'asks for a number',
  inputSchema: { type: 'object' },
  async run({ requestInput }) {
    const answer = await requestInput<{ n: number }>({
      key: 'n',
      message: 'A number?',
      schema: { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] },
    });
    return { doubled: answer.n * 2 };
  },
});

let t: TestApp;
let alice: string;
beforeAll(async () => {
  t = await startTestApp({ kinds: [hold, echo, boom, crash, strict, ask] });
  alice = await t.token('alice');
});
afterAll(async () => {
  await t?.stop();
});

const call = (name: string, args: unknown, capabilities: Record<string, unknown> = WITH_TASKS) =>
  v2Result(t.url, alice, 'tools/call', { name, arguments: args }, { capabilities });
const tasksCall = (method: string, params: Record<string, unknown>, token = alice) =>
  v2(t.url, token, method, params, { capabilities: WITH_TASKS });
const finished = (taskId: string) => pollUntil(t.url, alice, taskId, isFinal);

describe('tools/call with the tasks extension (2026-07-28)', () => {
  it('answers the flat CreateTaskResult for a stored task every face sees', async () => {
    const created = await call('hold', {});
    expect(created).toMatchObject({ resultType: 'task', status: 'working' });
    expect(Object.keys(created).sort()).toEqual(
      [
        '_meta',
        'createdAt',
        'lastUpdatedAt',
        'pollIntervalMs',
        'resultType',
        'status',
        'taskId',
        'ttlMs',
      ].sort(),
    );
    expect(Number.isInteger(created.ttlMs) && Number.isInteger(created.pollIntervalMs)).toBe(true);
    const job = await restClient(t.url)('GET', `/v1/jobs/${created.taskId}`, { token: alice });
    expect(job.body).toMatchObject({ taskId: created.taskId, status: 'working' });
    expect((await tasksCall('tasks/cancel', { taskId: created.taskId })).body.result).toEqual({
      resultType: 'complete',
      _meta: expect.any(Object),
    });
  });

  it('answers the finished result to a client without the extension, a string as its text', async () => {
    const plain = await call('echo', { value: 'hi' }, {});
    expect(plain).toMatchObject({
      resultType: 'complete',
      content: [{ type: 'text', text: 'hi' }],
    });
    expect(plain.taskId).toBeUndefined();
    const object = await call('echo', { value: { a: 1 } }, {});
    expect(object).toMatchObject({ content: [{ text: '{"a":1}' }], structuredContent: { a: 1 } });
  });

  it('refuses a required kind to a client without the extension with -32021, nothing stored', async () => {
    const answer = await v2(t.url, alice, 'tools/call', { name: 'strict', arguments: {} });
    expect(answer.status).toBe(400);
    expect(answer.body.error).toEqual({
      code: -32021,
      message: expect.any(String),
      data: { requiredCapabilities: { extensions: { 'io.modelcontextprotocol/tasks': {} } } },
    });
  });

  it('answers arguments the kind refuses as a tool error, and an unknown tool as -32602', async () => {
    const refused = await call('echo', 'not an object');
    expect(refused).toMatchObject({ resultType: 'complete', isError: true });
    const unknown = await v2(t.url, alice, 'tools/call', { name: 'nope', arguments: {} });
    expect(unknown.body.error.code).toBe(-32602);
  });
});

describe('tasks/get', () => {
  it('inlines the result once completed, without the related-task _meta', async () => {
    const { taskId } = await call('echo', { value: [1, 2] });
    const task = await finished(taskId);
    expect(task).toMatchObject({ resultType: 'complete', taskId, status: 'completed' });
    expect(task.result).toEqual({
      resultType: 'complete',
      content: [{ type: 'text', text: '[1,2]' }],
      structuredContent: { value: [1, 2] },
    });
  });

  it('reads a handler’s own failure as completed with isError and its code', async () => {
    const task = await finished((await call('boom', {})).taskId);
    expect(task.status).toBe('completed');
    expect(task.result).toMatchObject({
      isError: true,
      structuredContent: { code: 'BROKEN', message: 'It broke.' },
    });
    expect(task.error).toBeUndefined();
  });

  it('reads a failure outside the tool as failed with a JSON-RPC error and no result', async () => {
    const task = await finished((await call('crash', {})).taskId);
    expect(task).toMatchObject({
      status: 'failed',
      error: {
        code: -32603,
        message: 'The server failed.',
        data: { code: 'INTERNAL_SERVER_ERROR' },
      },
    });
    expect(task.result).toBeUndefined();
  });

  it('answers -32602 alike for a malformed, unknown or someone else’s id', async () => {
    const { taskId } = await call('hold', {});
    const bob = await t.token('bob');
    const answers = await Promise.all([
      tasksCall('tasks/get', { taskId: 'not-a-uuid' }),
      tasksCall('tasks/get', { taskId: '00000000-0000-4000-8000-000000000000' }),
      tasksCall('tasks/get', { taskId }, bob),
      tasksCall('tasks/cancel', { taskId }, bob),
      tasksCall('tasks/update', { taskId, inputResponses: {} }, bob),
    ]);
    for (const answer of answers)
      expect(answer.body.error).toEqual({ code: -32602, message: 'Task not found.' });
    await tasksCall('tasks/cancel', { taskId });
  });

  it('refuses the task methods to a request that does not declare the extension (-32021)', async () => {
    for (const method of ['tasks/get', 'tasks/update', 'tasks/cancel']) {
      const answer = await v2(t.url, alice, method, { taskId: 'x', inputResponses: {} });
      expect([answer.status, answer.body.error.code]).toEqual([400, -32021]);
    }
  });
});

describe('tasks/update', () => {
  it('surfaces the question, keeps it on a bad value, and resumes on a good one', async () => {
    const { taskId } = await call('ask', {});
    const waiting = await pollUntil(
      t.url,
      alice,
      taskId,
      (task) => task.status === 'input_required',
    );
    expect(waiting.inputRequests).toEqual({
      n: {
        method: 'elicitation/create',
        params: {
          mode: 'form',
          message: 'A number?',
          requestedSchema: {
            type: 'object',
            properties: { n: { type: 'integer' } },
            required: ['n'],
          },
        },
      },
    });
    const update = (inputResponses: unknown) =>
      tasksCall('tasks/update', { taskId, inputResponses });
    const ack = { resultType: 'complete', _meta: expect.any(Object) };
    expect((await update({ n: { action: 'accept', content: { n: 'x' } } })).body.result).toEqual(
      ack,
    );
    expect((await update({ other: { action: 'accept', content: { n: 1 } } })).body.result).toEqual(
      ack,
    );
    expect((await update({ n: { action: 'decline' } })).body.result).toEqual(ack);
    expect((await tasksCall('tasks/get', { taskId })).body.result.status).toBe('input_required');
    expect((await update({ n: { action: 'accept', content: { n: 21 } } })).body.result).toEqual(
      ack,
    );
    const done = await finished(taskId);
    expect(done.result.structuredContent).toEqual({ doubled: 42 });
    expect((await update('nope')).body.error.code).toBe(-32602);
  });
});

describe('tasks/cancel', () => {
  it('acknowledges, cancels, and acknowledges again once the task is final', async () => {
    const { taskId } = await call('hold', {});
    expect((await tasksCall('tasks/cancel', { taskId })).body.result.resultType).toBe('complete');
    expect((await finished(taskId)).status).toBe('cancelled');
    const again = await tasksCall('tasks/cancel', { taskId });
    expect(again.body.result).toEqual({ resultType: 'complete', _meta: expect.any(Object) });
    const done = await call('echo', { value: 1 });
    await finished(done.taskId);
    expect((await tasksCall('tasks/cancel', { taskId: done.taskId })).body.result).toBeDefined();
    expect((await finished(done.taskId)).status).toBe('completed');
  });
});
