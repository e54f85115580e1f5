import { type Message, Part, TaskState } from '@a2a-js/sdk';
import type { Client } from '@a2a-js/sdk/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tckKind } from '../../a2a-tck/kind.js';
import { a2aClient, codeOf, list, plainRequest, rejection } from '../../helpers/a2a.js';
import { startTestApp, type TestApp } from '../../helpers/app.js';

/**
 * The conformance kit's fixture agent (test/a2a-tck) performs every scenario the kit's MUST
 * requirements use, driven here as the kit drives it, with plain messages whose id prefix
 * names the scenario, through the SDK's client: completing, artifacts of each part type, a
 * direct message, asking for input, failing, cancelling (streams and push: tck-streams).
 */

let t: TestApp;
let kit: Client;
beforeAll(async () => {
  t = await startTestApp({
    kinds: [tckKind],
    replaceBuiltInKinds: true,
    env: { A2A_DEFAULT_SKILL: 'tck' },
  });
  kit = await a2aClient(t.url, await t.token('tck'));
});
afterAll(() => t?.stop());

let n = 0;
/** A fresh message id with the kit's scenario prefix, as `tck_id` makes one. */
const id = (prefix: string) => `${prefix}-${process.pid}-${++n}`;
const send = (prefix: string, options: Parameters<typeof plainRequest>[1] = {}) =>
  kit.sendMessage(plainRequest(['TCK'], { messageId: id(prefix), ...options }));
const firstPart = (task: any) => Part.toJSON(task.artifacts[0].parts[0]);

describe('completing', () => {
  it('tck-complete-task completes, with contextId, and each message gets its own task id', async () => {
    const first: any = await send('tck-complete-task');
    const second: any = await send('tck-complete-task');
    expect(first.status.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(first.contextId).toBe(first.id);
    expect(second.id).not.toBe(first.id);
    expect(firstPart(first)).toEqual({ text: 'Hello from TCK' });
    const read: any = await kit.getTask({ tenant: '', id: first.id });
    expect(read.status.state).toBe(TaskState.TASK_STATE_COMPLETED);
  });

  it('with returnImmediately the task is answered at once, working', async () => {
    const task: any = await send('tck-complete-task', { returnImmediately: true });
    expect(task.status.state).toBe(TaskState.TASK_STATE_WORKING);
  });

  it('a terminal task refuses a message (-32004), a cancel (-32002) and another context (-32602)', async () => {
    const done: any = await send('tck-complete-task');
    expect(codeOf(await rejection(send('tck-terminal', { taskId: done.id })))).toBe(-32004);
    expect(
      codeOf(await rejection(kit.cancelTask({ tenant: '', id: done.id, metadata: undefined }))),
    ).toBe(-32002);
    const other = await rejection(send('tck-mismatch', { taskId: done.id, contextId: id('ctx') }));
    expect(codeOf(other)).toBe(-32602);
  });

  it('any other prefix completes with an echo', async () => {
    for (const prefix of ['tck-send-003', 'tck-dm-test-001', 'tck-error-code-003']) {
      const task: any = await send(prefix);
      expect(firstPart(task)).toEqual({ text: 'Echo: TCK' });
    }
  });
});

describe('artifacts of each part type', () => {
  it('tck-artifact-text: a text part', async () => {
    expect(firstPart(await send('tck-artifact-text'))).toEqual({ text: 'Generated text content' });
  });

  it('tck-artifact-file: a file part with its bytes, named output.txt, text/plain', async () => {
    expect(firstPart(await send('tck-artifact-file'))).toEqual({
      raw: Buffer.from('tck').toString('base64'),
      filename: 'output.txt',
      mediaType: 'text/plain',
    });
  });

  it('tck-artifact-file-url: a file part by URL', async () => {
    expect(firstPart(await send('tck-artifact-file-url'))).toEqual({
      url: 'https://example.com/output.txt',
      filename: 'output.txt',
      mediaType: 'text/plain',
    });
  });

  it('tck-artifact-data: a data part', async () => {
    expect(firstPart(await send('tck-artifact-data'))).toEqual({
      data: { key: 'value', count: 42 },
    });
  });
});

it('tck-message-response: the answer is a Message with a text part', async () => {
  const answer = await send('tck-message-response');
  expect('messageId' in answer).toBe(true);
  expect((answer as Message).parts.map((p) => Part.toJSON(p))).toEqual([
    { text: 'Direct message response' },
  ]);
});

describe('asking for input', () => {
  it('tck-input-required waits for input; a follow-up naming only the task is taken', async () => {
    const asked: any = await send('tck-input-required');
    expect(asked.status.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    expect(asked.status.message.parts.length).toBeGreaterThan(0);
    const followed: any = await send('tck-infer-ctx', { taskId: asked.id });
    expect(followed.id).toBe(asked.id);
    expect(followed.contextId).toBe(asked.id);
  });

  it('follow-ups go on until one completes the task', async () => {
    const asked: any = await send('tck-input-required');
    const again: any = await send('tck-input-required', { taskId: asked.id });
    expect(again.status.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    const done: any = await send('tck-complete-task', { taskId: asked.id });
    expect(done.status.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(firstPart(done)).toEqual({ text: 'Hello from TCK' });
  });

  it('a task waiting for input is cancelled by CancelTask', async () => {
    const asked: any = await send('tck-input-required');
    const cancelled: any = await kit.cancelTask({ tenant: '', id: asked.id, metadata: undefined });
    expect(cancelled).toMatchObject({
      id: asked.id,
      status: { state: TaskState.TASK_STATE_CANCELED },
    });
  });
});

it('tck-reject-task fails the task with its message', async () => {
  const failed: any = await send('tck-reject-task');
  expect(failed.status.state).toBe(TaskState.TASK_STATE_FAILED);
  expect(Part.toJSON(failed.status.message.parts[0])).toEqual({ text: 'rejected' });
});

describe('what the kit refuses on purpose', () => {
  it('an unknown or malformed task id: TaskNotFoundError on get, cancel and message', async () => {
    for (const taskId of ['tck-nonexistent-1', '5b8c1e2a-3f4d-4e6f-8a9b-0c1d2e3f4a5b']) {
      expect(codeOf(await rejection(kit.getTask({ tenant: '', id: taskId })))).toBe(-32001);
      const cancel = kit.cancelTask({ tenant: '', id: taskId, metadata: undefined });
      expect(codeOf(await rejection(cancel))).toBe(-32001);
      expect(codeOf(await rejection(send('tck-multi-004', { taskId })))).toBe(-32001);
    }
  });

  it('a part of an unsupported media type: -32005; a client contextId: -32602; nothing stored', async () => {
    const before = (await kit.listTasks(list())).totalSize;
    const raw = plainRequest([{ raw: 'dGNr', mediaType: 'application/x-unsupported-tck-type' }], {
      messageId: id('tck-send-003'),
    });
    expect(codeOf(await rejection(kit.sendMessage(raw)))).toBe(-32005);
    const context = rejection(send('tck-complete-task', { contextId: id('tck-client-context') }));
    expect(codeOf(await context)).toBe(-32602);
    expect((await kit.listTasks(list())).totalSize).toBe(before);
  });
});
