import type { Message } from '@a2a-js/sdk';
import { Role, TaskState } from '@a2a-js/sdk';
import type { Client } from '@a2a-js/sdk/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineTaskKind } from '../../../src/tasks/kinds.js';
import {
  a2aClient,
  codeOf,
  drain,
  list,
  messageId,
  plainRequest,
  rejection,
  startRequest,
} from '../../helpers/a2a.js';
import { startTestApp, type TestApp } from '../../helpers/app.js';

/**
 * A message naming no skill, as generic A2A clients send one (DESIGN §10): without
 * `A2A_DEFAULT_SKILL` the answer is a Message the client can act on, naming the skills;
 * with it, the message starts that kind with `{ text, data, messageId }`.
 */

const messageShape = {
  type: 'object',
  properties: { text: { type: 'string' }, data: {}, messageId: { type: 'string' } },
  required: ['text', 'data', 'messageId'],
};

/** Returns what it was given; a message saying `ask` first asks for one more message. */
const echo = defineTaskKind<{ text: string }, unknown>({
  name: 'echo',
  description: 'Answers with the message it got.',
  inputSchema: messageShape,
  async run({ input, requestInput }) {
    if (input.text !== 'ask') return input;
    const more = await requestInput({ key: 'more', message: 'And then?', schema: messageShape });
    return { first: input, more };
  },
});

let plain: TestApp;
let withDefault: TestApp;
let alice: Client;
let carol: Client;
beforeAll(async () => {
  [plain, withDefault] = await Promise.all([
    startTestApp(),
    startTestApp({ kinds: [echo], env: { A2A_DEFAULT_SKILL: 'echo' } }),
  ]);
  alice = await a2aClient(plain.url, await plain.token('alice'));
  carol = await a2aClient(withDefault.url, await withDefault.token('carol'));
});
afterAll(() => Promise.all([plain?.stop(), withDefault?.stop()]));

const texts = (message: Message) =>
  message.parts.flatMap((p) => (p.content?.$case === 'text' ? [p.content.value] : []));
const data = (message: Message): any =>
  message.parts.find((p) => p.content?.$case === 'data')?.content?.value;

describe('without A2A_DEFAULT_SKILL', () => {
  it('the answer is a Message naming every skill, its input schema and how to name one; nothing is stored', async () => {
    const answer = await alice.sendMessage(plainRequest(['Hello, what can you do?']));
    expect('messageId' in answer).toBe(true);
    const message = answer as Message;
    expect(message.role).toBe(Role.ROLE_AGENT);
    const kinds = plain.app.tasks.listKinds();
    const [text] = texts(message);
    expect(text).toContain('metadata.skill');
    for (const kind of kinds) expect(text).toContain(kind.name);
    expect(data(message).skills).toEqual(
      kinds.map((kind) => ({
        id: kind.name,
        description: kind.description,
        inputSchema: kind.inputSchema,
      })),
    );
    expect((await alice.listTasks(list())).totalSize).toBe(0);
  });

  it('a skill of null or "" names none either', async () => {
    for (const skill of [null, '']) {
      const answer = await alice.sendMessage(plainRequest(['hi'], { metadata: { skill } }));
      expect(texts(answer as Message)[0]).toContain('metadata.skill');
    }
  });

  it('a client that does what the Message says starts a task', async () => {
    const help = (await alice.sendMessage(plainRequest(['help']))) as Message;
    const sleep = data(help).skills.find((s: { id: string }) => s.id === 'sleep');
    const task: any = await alice.sendMessage(startRequest(sleep.id, { ms: 0 }));
    expect(task.metadata.kind).toBe('sleep');
  });

  it('a text part marked text/plain is text too: the answer is still the Message', async () => {
    const answer = await alice.sendMessage(plainRequest([{ text: 'hi', mediaType: 'text/plain' }]));
    expect(texts(answer as Message)[0]).toContain('metadata.skill');
  });

  it('a stream of it is that one Message, and ends', async () => {
    const events = await drain(alice.sendMessageStream(plainRequest(['hi'])));
    expect(events).toHaveLength(1);
    expect(events[0]!.payload?.$case).toBe('message');
  });
});

describe('with A2A_DEFAULT_SKILL=echo', () => {
  it('starts the kind with its text parts joined, its first data part and its id', async () => {
    const id = messageId();
    const task: any = await carol.sendMessage(
      plainRequest(['Hello', { data: { a: 1 } }, 'world', { data: { b: 2 } }], { messageId: id }),
    );
    expect(task.metadata.kind).toBe('echo');
    expect(task.status.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(task.artifacts[0].parts[0].content.value).toEqual({
      text: 'Hello\nworld',
      data: { a: 1 },
      messageId: id,
    });
  });

  it('reads a text part marked text/plain, with a charset or without, as text', async () => {
    const id = messageId();
    const task: any = await carol.sendMessage(
      plainRequest(
        [
          { text: 'Hello', mediaType: 'text/plain' },
          { text: 'world', mediaType: 'Text/Plain; charset=utf-8' },
          { data: { a: 1 }, mediaType: 'application/json' },
        ],
        { messageId: id },
      ),
    );
    expect(task.status.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(task.artifacts[0].parts[0].content.value).toEqual({
      text: 'Hello\nworld',
      data: { a: 1 },
      messageId: id,
    });
  });

  it('other text types, and text/plain on a data part, are -32005; nothing is stored', async () => {
    const dave = await a2aClient(withDefault.url, await withDefault.token('dave'));
    for (const part of [
      { text: '# Hello', mediaType: 'text/markdown' },
      { text: '<p>Hello</p>', mediaType: 'text/html' },
      { data: { a: 1 }, mediaType: 'text/plain' },
    ]) {
      const err = await rejection(dave.sendMessage(plainRequest([part])));
      expect(codeOf(err), part.mediaType).toBe(-32005);
    }
    expect((await dave.listTasks(list())).totalSize).toBe(0);
  });

  it('the card says the default skill, and the agent, take text/plain; other skills JSON', async () => {
    const card = await (await fetch(`${withDefault.url}/.well-known/agent-card.json`)).json();
    expect(card.defaultInputModes).toEqual(['application/json', 'text/plain']);
    const modes = Object.fromEntries(card.skills.map((s: any) => [s.id, s.inputModes]));
    expect(modes.echo).toEqual(['application/json', 'text/plain']);
    expect(modes.sleep).toEqual(['application/json']);
  });

  it('a message without text or data gives "" and null', async () => {
    const id = messageId();
    const task: any = await carol.sendMessage(plainRequest([], { messageId: id }));
    expect(task.artifacts[0].parts[0].content.value).toEqual({
      text: '',
      data: null,
      messageId: id,
    });
  });

  it('messageId stays the idempotency key: the same message again is the same task, other text -32602', async () => {
    const id = messageId();
    const first: any = await carol.sendMessage(plainRequest(['once'], { messageId: id }));
    const again: any = await carol.sendMessage(plainRequest(['once'], { messageId: id }));
    expect(again.id).toBe(first.id);
    const other = await rejection(carol.sendMessage(plainRequest(['twice'], { messageId: id })));
    expect(codeOf(other)).toBe(-32602);
  });

  it('a message naming a skill starts that skill, with its first data part as before', async () => {
    const task: any = await carol.sendMessage(startRequest('sleep', { ms: 0 }));
    expect(task.metadata.kind).toBe('sleep');
  });

  it("an answer to the kind's question is read the same way, text and all", async () => {
    const asked: any = await carol.sendMessage(plainRequest(['ask']));
    expect(asked.status.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    const id = messageId();
    const done: any = await carol.sendMessage(
      plainRequest(['go on'], { taskId: asked.id, messageId: id }),
    );
    expect(done.status.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(done.artifacts[0].parts[0].content.value.more).toEqual({
      text: 'go on',
      data: null,
      messageId: id,
    });
  });

  it('an answer to another kind still needs a data part', async () => {
    const asked: any = await carol.sendMessage(
      startRequest('approval', { question: 'Ship?' }, { returnImmediately: false }),
    );
    const err = await rejection(carol.sendMessage(plainRequest(['yes'], { taskId: asked.id })));
    expect(codeOf(err)).toBe(-32602);
  });
});
