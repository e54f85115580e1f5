import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineTaskKind, TaskFailedError } from '../../../src/tasks/kinds.js';
import { eventually, startTestApp, type TestApp } from '../../helpers/app.js';
import { holdWith } from '../../helpers/kinds.js';
import { connectMcp, type McpClient, rpcError, wireMessage } from '../../helpers/mcp.js';
import { restClient } from '../../helpers/rest.js';

/** Waits until cancelled. */
const hold = holdWith({ pollIntervalMs: 1_500 });
/** Completes with whatever `value` it was given (not always an object). */
const echo = defineTaskKind({
  name: 'echo',
  description: 'answers its value',
  inputSchema: { type: 'object', properties: { value: {} }, additionalProperties: false },
  run: async ({ input }) => (input as { value?: unknown }).value,
});
const boom = defineTaskKind({
  name: 'boom',
  description: 'fails with its own code',
  inputSchema: { type: 'object' },
  run: async () => {
    throw new TaskFailedError('BROKEN', 'It broke.');
  },
});

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,3})?Z$/;
const RELATED = 'io.modelcontextprotocol/related-task';

let t: TestApp;
let alice: string;
let mcp: McpClient;
beforeAll(async () => {
  t = await startTestApp({
    kinds: [hold, echo, boom],
    env: { TASK_MIN_TTL_MS: '5000', TASK_MAX_TTL_MS: '7200000' },
  });
  alice = await t.token('alice');
  mcp = await connectMcp(t.url, alice);
});
afterAll(async () => {
  await mcp?.close();
  await t?.stop();
});

const tasks = () => mcp.client.experimental.tasks;
const jobs = () => restClient(t.url);

async function countOf(token: string): Promise<number> {
  const res = await t.gql('{ tasks(first: 100) { edges { node { id } } } }', {}, token);
  return res.data.tasks.edges.length;
}

describe('initialize', () => {
  it('names the server taskhandle and announces tools and tasks', () => {
    expect(mcp.client.getServerVersion()?.name).toBe('taskhandle');
    expect(mcp.client.getServerCapabilities()).toEqual({
      tools: {},
      tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } },
    });
    expect(mcp.transport.sessionId).toMatch(/^[0-9a-f-]{36}$/);
  });
});

describe('tools', () => {
  it('lists one tool per task kind, with its schema and optional task support', async () => {
    const { tools } = await mcp.client.listTools();
    const kinds = (await t.gql('{ taskKinds { name description inputSchema } }', {}, alice)).data
      .taskKinds;
    expect(tools.map((tool) => tool.name).sort()).toEqual(
      kinds.map((k: { name: string }) => k.name).sort(),
    );
    for (const kind of kinds) {
      expect(tools.find((tool) => tool.name === kind.name)).toEqual({
        name: kind.name,
        description: kind.description,
        inputSchema: kind.inputSchema,
        execution: { taskSupport: 'optional' },
      });
    }
  });
});

describe('tools/call with task', () => {
  it('answers a committed, working task at once, with the same id on every face', async () => {
    const { task } = await mcp.startTask('hold', {});
    expect(task).toEqual({
      taskId: expect.stringMatching(/^[0-9a-f-]{36}$/),
      status: 'working',
      createdAt: expect.stringMatching(ISO),
      lastUpdatedAt: expect.stringMatching(ISO),
      ttl: 3_600_000,
      pollInterval: 1_500,
    });
    const job = await jobs()('GET', `/v1/jobs/${task.taskId}`, { token: alice });
    expect(job.body).toMatchObject({ taskId: task.taskId, status: 'working', ttlMs: 3_600_000 });
    const gql = await t.gql(
      'query($id: ID!) { task(id: $id) { id kind input } }',
      { id: task.taskId },
      alice,
    );
    expect(gql.data.task).toEqual({ id: task.taskId, kind: 'hold', input: {} });
    await tasks().cancelTask(task.taskId);
  });

  it('collects, the other way round, a task started over GraphQL and one over /v1/jobs', async () => {
    const viaGraphql = await t.gql(
      'mutation($input: StartTaskInput!) { startTask(input: $input) { id } }',
      { input: { kind: 'echo', input: { value: 'gql' } } },
      alice,
    );
    const viaRest = await jobs()('POST', '/v1/jobs', {
      token: alice,
      body: { kind: 'echo', input: { value: 'rest' } },
    });
    for (const [id, value] of [
      [viaGraphql.data.startTask.id as string, 'gql'],
      [viaRest.body.taskId as string, 'rest'],
    ]) {
      const result = await tasks().getTaskResult(id as string, CallToolResultSchema);
      expect(result.structuredContent).toEqual({ value });
      expect((await tasks().getTask(id as string)).status).toBe('completed');
    }
  });

  it('clamps ttl like ttlMs', async () => {
    const short = await mcp.startTask('hold', {}, 1);
    const long = await mcp.startTask('hold', {}, 10 ** 12);
    expect(short.task.ttl).toBe(5_000);
    expect(long.task.ttl).toBe(7_200_000);
    await tasks().cancelTask(short.task.taskId);
    await tasks().cancelTask(long.task.taskId);
  });

  it('refuses an unknown tool and arguments failing the schema with -32602, storing nothing', async () => {
    const carol = await connectMcp(t.url, await t.token('carol'));
    const unknown = await rpcError(carol.startTask('nope', {}));
    expect(unknown.code).toBe(-32602);
    const bad = await rpcError(carol.startTask('sleep', { ms: 'soon' }));
    expect(bad.code).toBe(-32602);
    expect(wireMessage(bad)).toMatch(/ms/);
    const extra = await rpcError(carol.startTask('sleep', { ms: 1, extra: true }));
    expect(extra.code).toBe(-32602);
    expect(await countOf(await t.token('carol'))).toBe(0);
    await carol.close();
  });
});

describe('tasks/get and tasks/result', () => {
  it('answers the completed result, the same every time, with the related-task _meta', async () => {
    const { task } = await mcp.startTask('echo', { value: { n: 1, s: 'x' } });
    const first = await tasks().getTaskResult(task.taskId, CallToolResultSchema);
    expect(first).toEqual({
      content: [{ type: 'text', text: '{"n":1,"s":"x"}' }],
      structuredContent: { n: 1, s: 'x' },
      _meta: { [RELATED]: { taskId: task.taskId } },
    });
    expect(await tasks().getTaskResult(task.taskId, CallToolResultSchema)).toEqual(first);
    const got = await tasks().getTask(task.taskId);
    expect(got).toMatchObject({ taskId: task.taskId, status: 'completed', ttl: 3_600_000 });
    expect(got.createdAt).toBe(task.createdAt);
  });

  it('wraps a result that is not an object in { value }', async () => {
    for (const value of [42, 'text', [1, 2], null]) {
      const { task } = await mcp.startTask('echo', { value });
      const result = await tasks().getTaskResult(task.taskId, CallToolResultSchema);
      expect(result.structuredContent).toEqual({ value });
      expect(result.content).toEqual([{ type: 'text', text: JSON.stringify(value) }]);
    }
  });

  it('answers a failure as isError with its code, and says it in statusMessage', async () => {
    const { task } = await mcp.startTask('boom', {});
    const result = await tasks().getTaskResult(task.taskId, CallToolResultSchema);
    expect(result).toEqual({
      isError: true,
      content: [{ type: 'text', text: 'It broke.' }],
      structuredContent: { code: 'BROKEN', message: 'It broke.' },
      _meta: { [RELATED]: { taskId: task.taskId } },
    });
    expect(await tasks().getTask(task.taskId)).toMatchObject({
      status: 'failed',
      statusMessage: 'It broke.',
    });
  });

  it('carries the handler status message while working', async () => {
    const { task } = await mcp.startTask('sleep', { ms: 60_000, steps: 1000 });
    const seen = await eventually(async () => {
      const got = await tasks().getTask(task.taskId);
      return got.statusMessage !== undefined || got.status !== 'working' ? got : undefined;
    });
    expect(seen.status).toBe('working');
    expect(typeof seen.statusMessage).toBe('string');
    await tasks().cancelTask(task.taskId);
  });
});

describe('tasks/cancel', () => {
  it('cancels before answering, sticks, and tasks/result says so', async () => {
    const { task } = await mcp.startTask('hold', {});
    const waiting = tasks().getTaskResult(task.taskId, CallToolResultSchema);
    const cancelled = await tasks().cancelTask(task.taskId);
    expect(cancelled).toMatchObject({ taskId: task.taskId, status: 'cancelled' });
    const cancelledResult = {
      isError: true,
      content: [{ type: 'text', text: 'The task was cancelled.' }],
      structuredContent: { code: 'CANCELLED', message: 'The task was cancelled.' },
      _meta: { [RELATED]: { taskId: task.taskId } },
    };
    expect(await waiting).toEqual(cancelledResult);
    await eventually(async () => (t.app.runner?.holds(task.taskId) ? undefined : true));
    expect((await tasks().getTask(task.taskId)).status).toBe('cancelled');
    expect(await tasks().getTaskResult(task.taskId, CallToolResultSchema)).toEqual(cancelledResult);
    // A cancelled task is final: cancelling it again is refused like any final task.
    expect((await rpcError(tasks().cancelTask(task.taskId))).code).toBe(-32602);
  });

  it('refuses a finished task with -32602', async () => {
    const { task } = await mcp.startTask('echo', { value: 1 });
    await tasks().getTaskResult(task.taskId, CallToolResultSchema);
    const err = await rpcError(tasks().cancelTask(task.taskId));
    expect(err.code).toBe(-32602);
    expect((await tasks().getTask(task.taskId)).status).toBe('completed');
  });
});

describe('tasks/list', () => {
  it('pages the caller’s tasks newest first, 20 a page, with an opaque cursor', async () => {
    const dave = await t.token('dave');
    const client = await connectMcp(t.url, dave);
    const ids: string[] = [];
    for (let i = 0; i < 23; i++)
      ids.push((await client.startTask('echo', { value: i })).task.taskId);
    const first = await client.client.experimental.tasks.listTasks();
    expect(first.tasks).toHaveLength(20);
    expect(first.tasks.map((task) => task.taskId)).toEqual(ids.slice(3).reverse());
    expect(typeof first.nextCursor).toBe('string');
    const second = await client.client.experimental.tasks.listTasks(first.nextCursor);
    expect(second.tasks.map((task) => task.taskId)).toEqual(ids.slice(0, 3).reverse());
    expect(second.nextCursor).toBeUndefined();
    const bad = await rpcError(client.client.experimental.tasks.listTasks('not-a-cursor'));
    expect(bad.code).toBe(-32602);
    await client.close();
  });
});

describe('tools/call without task', () => {
  it('waits and answers what tasks/result answers', async () => {
    const result = await mcp.client.callTool({ name: 'echo', arguments: { value: { ok: true } } });
    expect(result.structuredContent).toEqual({ ok: true });
    const taskId = (result._meta as Record<string, { taskId: string }>)[RELATED]?.taskId as string;
    expect(await tasks().getTaskResult(taskId, CallToolResultSchema)).toEqual(result);
  });

  it('answers a failing argument as a tool error, storing nothing; an unknown tool is -32602', async () => {
    const erin = await t.token('erin');
    const client = await connectMcp(t.url, erin);
    const refused = await client.client.callTool({ name: 'sleep', arguments: { ms: -1 } });
    expect(refused.isError).toBe(true);
    expect((refused.structuredContent as { code: string }).code).toBe('BAD_USER_INPUT');
    expect((refused.content as Array<{ text: string }>)[0]?.text).toMatch(/ms/);
    const unknown = await rpcError(client.client.callTool({ name: 'nope', arguments: {} }));
    expect(unknown.code).toBe(-32602);
    expect(await countOf(erin)).toBe(0);
    await client.close();
  });
});
