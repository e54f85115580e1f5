import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineTaskKind } from '../../../src/tasks/kinds.js';
import { startTestApp, type TestApp } from '../../helpers/app.js';
import { isFinal, pollUntil, v2Result, WITH_TASKS } from '../../helpers/mcp-v2.js';

const hello = defineTaskKind({
  name: 'hello',
  description: 'greets name',
  inputSchema: {
    type: 'object',
    properties: { name: { type: 'string' }, loud: { type: 'boolean' } },
    required: ['name'],
  },
  run: async ({ input }) => `Hello, ${(input as { name: string }).name}!`,
});

let t: TestApp;
let alice: string;
beforeAll(async () => {
  t = await startTestApp({ kinds: [hello] });
  alice = await t.token('alice');
});
afterAll(async () => {
  await t?.stop();
});

const ELICITING_TASKS = { ...WITH_TASKS, elicitation: {} };
const call = (params: Record<string, unknown>, capabilities: Record<string, unknown>) =>
  v2Result(t.url, alice, 'tools/call', { name: 'hello', ...params }, { capabilities });
const countOf = async () =>
  (await t.gql('{ tasks(first: 100) { edges { node { id } } } }', {}, alice)).data.tasks.edges
    .length;

describe('missing arguments asked for before the task starts (2026-07-28)', () => {
  it('asks for the missing required arguments, stores nothing, then starts from the answer', async () => {
    const before = await countOf();
    const asked = await call({ arguments: {} }, ELICITING_TASKS);
    expect(asked).toMatchObject({
      resultType: 'input_required',
      inputRequests: {
        arguments: {
          method: 'elicitation/create',
          params: {
            mode: 'form',
            requestedSchema: {
              type: 'object',
              properties: { name: { type: 'string' } },
              required: ['name'],
            },
          },
        },
      },
    });
    expect(asked.taskId).toBeUndefined();
    expect(await countOf()).toBe(before);
    const created = await call(
      {
        arguments: {},
        inputResponses: { arguments: { action: 'accept', content: { name: 'Ada' } } },
      },
      ELICITING_TASKS,
    );
    expect(created.resultType).toBe('task');
    const done = await pollUntil(t.url, alice, created.taskId, isFinal);
    expect(done.result.content).toEqual([{ type: 'text', text: 'Hello, Ada!' }]);
  });

  it('does not ask a client without elicitation, nor twice: the kind’s validation answers', async () => {
    const plain = await call({ arguments: {} }, WITH_TASKS);
    expect(plain).toMatchObject({ resultType: 'complete', isError: true });
    const declined = await call(
      { arguments: {}, inputResponses: { arguments: { action: 'decline' } } },
      ELICITING_TASKS,
    );
    expect(declined).toMatchObject({ resultType: 'complete', isError: true });
  });
});
