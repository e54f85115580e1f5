import { CallToolResultSchema, type ElicitResult } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { defineTaskKind } from '../../../src/tasks/kinds.js';
import { eventually } from '../../helpers/app.js';
import { alice, t, useFileApp } from '../../helpers/file-app.js';
import { connectMcp } from '../../helpers/mcp.js';
import { restClient } from '../../helpers/rest.js';

const RELATED = 'io.modelcontextprotocol/related-task';
const DECISION_SCHEMA = {
  type: 'object',
  properties: { approved: { type: 'boolean' }, comment: { type: 'string' } },
  required: ['approved'],
  additionalProperties: false,
};

/** Asks for a list: not a flat form, so MCP cannot ask it. */
const pick = defineTaskKind({
  name: 'pick',
  description: 'asks for a list of items',
  inputSchema: { type: 'object' },
  run: ({ requestInput }) =>
    requestInput({
      key: 'items',
      message: 'Which items?',
      schema: {
        type: 'object',
        properties: { items: { type: 'array', items: { type: 'string' } } },
      },
    }),
});

/** Asks two flat questions at once: this revision asks them one after the other. */
const pair = defineTaskKind({
  name: 'pair',
  description: 'asks for two words at once',
  inputSchema: { type: 'object' },
  run: ({ requestInputs }) =>
    requestInputs(
      ['first', 'second'].map((key) => ({
        key,
        message: `The ${key} word?`,
        schema: { type: 'object', properties: { word: { type: 'string' } }, required: ['word'] },
      })),
    ),
});

useFileApp({ kinds: [pick, pair] });

/** An elicitation handler that answers from a script and records what it was asked. */
function scripted(...answers: ElicitResult[]) {
  const asked: any[] = [];
  let notify: (() => void) | undefined;
  return {
    asked,
    /** Resolves once `n` questions have been asked. */
    until: (n: number) =>
      new Promise<void>((resolve) => {
        if (asked.length >= n) return resolve();
        notify = () => asked.length >= n && resolve();
      }),
    handler: (params: any) => {
      asked.push(params);
      notify?.();
      return answers[Math.min(asked.length - 1, answers.length - 1)] as ElicitResult;
    },
  };
}

const GET = 'query($id: ID!) { task(id: $id) { status version result inputRequest { key } } }';
const ANSWER =
  'mutation($id: ID!, $value: JSON!) { provideTaskInput(id: $id, key: "decision", value: $value) { status } }';

describe('questions while input_required', () => {
  it('asks over elicitation/create with the related task, and stores an accepted answer', async () => {
    const script = scripted({ action: 'accept', content: { approved: true, comment: 'fine' } });
    const client = await connectMcp(t.url, alice, { elicit: script.handler });
    const { task } = await client.startTask('approval', { question: 'Ship it?' });
    const result = await client.client.experimental.tasks.getTaskResult(
      task.taskId,
      CallToolResultSchema,
    );
    expect(result.structuredContent).toEqual({ approved: true, comment: 'fine' });
    expect(script.asked).toEqual([
      {
        mode: 'form',
        message: 'Ship it?',
        // The SDK client keeps only MCP's form keywords of the schema the server sends.
        requestedSchema: {
          type: 'object',
          properties: DECISION_SCHEMA.properties,
          required: ['approved'],
        },
        _meta: { [RELATED]: { taskId: task.taskId } },
      },
    ]);
    await client.close();
  });

  it('asks the questions of a task with several outstanding one after the other', async () => {
    const script = scripted({ action: 'accept', content: { word: 'same' } });
    const client = await connectMcp(t.url, alice, { elicit: script.handler });
    const { task } = await client.startTask('pair', {});
    const result = await client.client.experimental.tasks.getTaskResult(
      task.taskId,
      CallToolResultSchema,
    );
    expect(result.structuredContent).toEqual({ first: { word: 'same' }, second: { word: 'same' } });
    expect(script.asked.map((asked) => asked.message)).toEqual([
      'The first word?',
      'The second word?',
    ]);
    await client.close();
  });

  it('asks again when the answer fails the schema, storing nothing of it', async () => {
    const script = scripted(
      { action: 'accept', content: { approved: 'yes' } },
      { action: 'accept', content: { approved: false } },
    );
    const client = await connectMcp(t.url, alice, { elicit: script.handler });
    const { task } = await client.startTask('approval', { question: 'Again?' });
    const result = await client.client.experimental.tasks.getTaskResult(
      task.taskId,
      CallToolResultSchema,
    );
    expect(result.structuredContent).toEqual({ approved: false, comment: null });
    expect(script.asked).toHaveLength(2);
    expect(script.asked[1]).toEqual(script.asked[0]);
    await client.close();
  });

  it.each(['decline', 'cancel'] as const)(
    'stores nothing on %s, and the call keeps waiting for an answer given elsewhere',
    async (action) => {
      const script = scripted({ action });
      const client = await connectMcp(t.url, alice, { elicit: script.handler });
      const { task } = await client.startTask('approval', { question: `${action}?` });
      const waiting = client.client.experimental.tasks.getTaskResult(
        task.taskId,
        CallToolResultSchema,
      );
      await script.until(1);
      const before = (await t.gql(GET, { id: task.taskId }, alice)).data.task;
      expect(before).toMatchObject({ status: 'INPUT_REQUIRED', inputRequest: { key: 'decision' } });
      // Had the refusal stored anything, this answer would be NOT_AWAITING_INPUT.
      const answered = await t.gql(ANSWER, { id: task.taskId, value: { approved: true } }, alice);
      expect(answered.errors).toBeUndefined();
      expect((await waiting).structuredContent).toEqual({ approved: true, comment: null });
      expect(script.asked).toHaveLength(1);
      await client.close();
    },
  );

  it('asks the same way during a plain tools/call', async () => {
    const script = scripted({ action: 'accept', content: { approved: true } });
    const client = await connectMcp(t.url, alice, { elicit: script.handler });
    const result = await client.client.callTool({
      name: 'approval',
      arguments: { question: 'Plain?' },
    });
    expect(result.structuredContent).toEqual({ approved: true, comment: null });
    expect(script.asked[0]).toMatchObject({ mode: 'form', message: 'Plain?' });
    await client.close();
  });

  it('does not ask a schema that is not a flat form: it is answered over REST, and the wait ends', async () => {
    const script = scripted({ action: 'accept', content: {} });
    const client = await connectMcp(t.url, alice, { elicit: script.handler });
    const { task } = await client.startTask('pick', {});
    const waiting = client.client.experimental.tasks.getTaskResult(
      task.taskId,
      CallToolResultSchema,
    );
    await eventually(async () =>
      (await t.gql(GET, { id: task.taskId }, alice)).data.task.status === 'INPUT_REQUIRED'
        ? true
        : undefined,
    );
    const answered = await restClient(t.url)('POST', `/v1/jobs/${task.taskId}/input`, {
      token: alice,
      body: { key: 'items', value: { items: ['a'] } },
    });
    expect(answered.status).toBe(200);
    expect((await waiting).structuredContent).toEqual({ items: ['a'] });
    expect(script.asked).toHaveLength(0);
    await client.close();
  });

  it('asks neither a client without elicitation nor a token without tasks:write', async () => {
    const script = scripted({ action: 'accept', content: { approved: true } });
    const reader = await t.token('alice', ['tasks:read']);
    const silent = await connectMcp(t.url, alice);
    const readOnly = await connectMcp(t.url, reader, { elicit: script.handler });
    const { task } = await silent.startTask('approval', { question: 'Nobody asks?' });
    const results = [silent, readOnly].map((c) =>
      c.client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema),
    );
    await eventually(async () =>
      (await t.gql(GET, { id: task.taskId }, alice)).data.task.status === 'INPUT_REQUIRED'
        ? true
        : undefined,
    );
    await t.gql(ANSWER, { id: task.taskId, value: { approved: false } }, alice);
    for (const result of await Promise.all(results)) {
      expect(result.structuredContent).toEqual({ approved: false, comment: null });
    }
    expect(script.asked).toHaveLength(0);
    await silent.close();
    await readOnly.close();
  });

  it('withdraws an open question when the task is cancelled, and answers the cancellation', async () => {
    let asked!: () => void;
    const open = new Promise<void>((resolve) => (asked = resolve));
    const client = await connectMcp(t.url, alice, {
      elicit: () =>
        new Promise<ElicitResult>(() => {
          asked();
        }),
    });
    // Watched on the wire: the SDK client drops a cancellation of request id 0 (a falsy-id check).
    let questionId: unknown;
    let withdrawn!: () => void;
    const cancelled = new Promise<void>((resolve) => (withdrawn = resolve));
    const deliver = client.transport.onmessage as NonNullable<typeof client.transport.onmessage>;
    client.transport.onmessage = (message: any) => {
      if (message.method === 'elicitation/create') questionId = message.id;
      if (message.method === 'notifications/cancelled' && message.params.requestId === questionId) {
        withdrawn();
      }
      deliver(message);
    };
    const { task } = await client.startTask('approval', { question: 'Cancel me?' });
    const waiting = client.client.experimental.tasks.getTaskResult(
      task.taskId,
      CallToolResultSchema,
    );
    await open;
    await client.client.experimental.tasks.cancelTask(task.taskId);
    expect((await waiting).structuredContent).toEqual({
      code: 'CANCELLED',
      message: 'The task was cancelled.',
    });
    await cancelled;
    await client.close();
  });
});
