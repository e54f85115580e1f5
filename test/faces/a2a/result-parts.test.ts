import { type Message, Part, Role, TaskState } from '@a2a-js/sdk';
import type { Client } from '@a2a-js/sdk/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineTaskKind } from '../../../src/tasks/kinds.js';
import { a2aClient, drain, startRequest } from '../../helpers/a2a.js';
import { startTestApp, type TestApp } from '../../helpers/app.js';

/**
 * A result that names its A2A parts (`a2a/parts`, docs/a2a.md): the result artifact is made
 * of them, and with `a2a/reply: "message"` a waiting SendMessage answers a Message. Other
 * faces show the result as it is; a result whose parts are not parts is one data part.
 */

/** Completes with the `result` it is given. */
const given = defineTaskKind<{ result: unknown }, unknown>({
  name: 'given',
  description: 'Completes with its input.result.',
  inputSchema: { type: 'object', properties: { result: {} }, required: ['result'] },
  run: async ({ input }) => input.result,
});

let t: TestApp;
let token: string;
let alice: Client;
beforeAll(async () => {
  t = await startTestApp({ kinds: [given] });
  token = await t.token('alice');
  alice = await a2aClient(t.url, token);
});
afterAll(() => t?.stop());

const PARTS = [
  { text: 'Generated text content' },
  { raw: Buffer.from('tck').toString('base64'), filename: 'output.txt', mediaType: 'text/plain' },
  { url: 'https://example.com/output.txt', filename: 'output.txt', mediaType: 'text/plain' },
  { data: { key: 'value', count: 42 }, metadata: { note: 'kept' } },
];

/** Runs `given` with `result` and waits for the answer (a task, or the agent's message). */
const complete = (result: unknown, returnImmediately = false) =>
  alice.sendMessage(startRequest('given', { result }, { returnImmediately }));

describe('a2a/parts', () => {
  it('makes the result artifact of exactly those parts, of every kind', async () => {
    const task: any = await complete({ 'a2a/parts': PARTS, other: 'kept for other faces' });
    expect(task.status.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(task.artifacts).toHaveLength(1);
    expect(task.artifacts[0].artifactId).toBe('result');
    expect(task.artifacts[0].parts.map((p: Part) => Part.toJSON(p))).toEqual(PARTS);
    const read: any = await alice.getTask({ tenant: '', id: task.id });
    expect(read.artifacts[0].parts).toEqual(task.artifacts[0].parts);
  });

  it('leaves the result as it is on the other faces', async () => {
    const result = { 'a2a/parts': [{ text: 'hi' }], other: 1 };
    const task: any = await complete(result);
    const res = await t.gql('query($id: ID!) { task(id: $id) { result } }', { id: task.id }, token);
    expect(res.data.task.result).toEqual(result);
  });

  it('streams them as the artifactUpdate before the completed status', async () => {
    const events = await drain(
      alice.sendMessageStream(startRequest('given', { result: { 'a2a/parts': PARTS } })),
    );
    const artifact = events.find((e) => e.payload?.$case === 'artifactUpdate')!.payload as any;
    expect(artifact.value.artifact.parts.map((p: Part) => Part.toJSON(p))).toEqual(PARTS);
    expect(events.at(-1)!.payload).toMatchObject({
      $case: 'statusUpdate',
      value: { status: { state: TaskState.TASK_STATE_COMPLETED } },
    });
  });

  for (const [what, listed] of [
    ['not a list', { text: 'x' }],
    ['an empty list', []],
    ['a part of no known kind', [{ text: 'ok' }, { image: 'x' }]],
    ['an item that is not an object', [{ text: 'ok' }, 'x']],
  ] as const) {
    it(`that are ${what} leave the result one data part`, async () => {
      const result = { 'a2a/parts': listed, 'a2a/reply': 'message' };
      const task: any = await complete(result);
      expect('status' in task).toBe(true);
      expect(task.artifacts[0].parts.map((p: Part) => Part.toJSON(p))).toEqual([{ data: result }]);
    });
  }
});

describe('a2a/reply: "message"', () => {
  it('a waiting SendMessage gets the agent’s Message, tied to the task, which stays readable', async () => {
    const answer = await complete({ 'a2a/parts': [{ text: 'Direct' }], 'a2a/reply': 'message' });
    expect('messageId' in answer).toBe(true);
    const message = answer as Message;
    expect(message).toMatchObject({ role: Role.ROLE_AGENT, taskId: expect.any(String) });
    expect(message.contextId).toBe(message.taskId);
    expect(message.parts.map((p) => Part.toJSON(p))).toEqual([{ text: 'Direct' }]);
    const task: any = await alice.getTask({ tenant: '', id: message.taskId });
    expect(task.status.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(task.artifacts[0].parts.map((p: Part) => Part.toJSON(p))).toEqual([{ text: 'Direct' }]);
  });

  it('with returnImmediately, the answer is the task as always', async () => {
    const answer: any = await complete(
      { 'a2a/parts': [{ text: 'x' }], 'a2a/reply': 'message' },
      true,
    );
    expect('status' in answer).toBe(true);
  });

  it('another value of a2a/reply answers the task', async () => {
    const answer: any = await complete({ 'a2a/parts': [{ text: 'x' }], 'a2a/reply': 'task' });
    expect('status' in answer).toBe(true);
  });
});
