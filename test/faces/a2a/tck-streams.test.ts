import { Part, type StreamResponse, TaskState } from '@a2a-js/sdk';
import type { Client } from '@a2a-js/sdk/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tckKind } from '../../a2a-tck/kind.js';
import { a2aClient, codeOf, drain, plainRequest, rejection } from '../../helpers/a2a.js';
import { eventually, startTestApp, type TestApp } from '../../helpers/app.js';
import { type Receiver, startReceiver } from '../../helpers/receiver.js';

/**
 * The conformance kit's fixture agent (test/a2a-tck) over streams and push notifications, as
 * the kit's MUST requirements use it: streamed scenarios, subscribing to a task that waits
 * for input (one or two subscribers) until a follow-up completes it, and webhook delivery
 * with the config's authentication.
 */

let t: TestApp;
let r: Receiver;
let kit: Client;
beforeAll(async () => {
  t = await startTestApp({
    kinds: [tckKind],
    replaceBuiltInKinds: true,
    env: {
      A2A_DEFAULT_SKILL: 'tck',
      WEBHOOK_ALLOW_PRIVATE: 'true',
      WEBHOOK_POLL_INTERVAL_MS: '50',
    },
  });
  r = await startReceiver();
  kit = await a2aClient(t.url, await t.token('tck'));
});
afterAll(async () => {
  await t?.stop();
  await r?.close();
});

let n = 0;
const id = (prefix: string) => `${prefix}-${process.pid}-${++n}`;
const request = (prefix: string, options: Parameters<typeof plainRequest>[1] = {}) =>
  plainRequest(['TCK'], { messageId: id(prefix), ...options });

/** The task state an event carries, if any. */
function stateOf(event: StreamResponse): TaskState | undefined {
  const payload = event.payload;
  if (payload?.$case === 'task') return payload.value.status?.state;
  if (payload?.$case === 'statusUpdate') return payload.value.status?.state;
  return undefined;
}

describe('SendStreamingMessage', () => {
  for (const [prefix, text] of [
    ['tck-stream-001', 'Stream hello from TCK'],
    ['tck-stream-003', 'Stream task lifecycle'],
    ['tck-stream-ordering-001', 'Ordered output'],
    ['tck-stream-artifact-text', 'Streamed text content'],
  ] as const) {
    it(`${prefix}: the task (working), its changes, the artifact, completed, and the end`, async () => {
      const events = await drain(kit.sendMessageStream(request(prefix)));
      expect(events[0]!.payload?.$case).toBe('task');
      expect(stateOf(events[0]!)).toBe(TaskState.TASK_STATE_WORKING);
      const states = events.map(stateOf).filter((s) => s !== undefined);
      expect(states.at(-1)).toBe(TaskState.TASK_STATE_COMPLETED);
      // States never go back (the kit's STREAM-ORDER-001).
      expect([...states].sort((a, b) => a - b)).toEqual(states);
      const artifact = events.find((e) => e.payload?.$case === 'artifactUpdate')!.payload as any;
      expect(artifact.value.artifact.parts.map((p: Part) => Part.toJSON(p))).toEqual([{ text }]);
      expect(events.indexOf(events.find((e) => e.payload === artifact)!)).toBe(events.length - 2);
    });
  }

  it('tck-stream-002: the task first, completed last', async () => {
    const events = await drain(kit.sendMessageStream(request('tck-stream-002')));
    expect(events[0]!.payload?.$case).toBe('task');
    expect(stateOf(events.at(-1)!)).toBe(TaskState.TASK_STATE_COMPLETED);
  });

  it('tck-stream-artifact-file: the file part', async () => {
    const events = await drain(kit.sendMessageStream(request('tck-stream-artifact-file')));
    const artifact = events.find((e) => e.payload?.$case === 'artifactUpdate')!.payload as any;
    expect(Part.toJSON(artifact.value.artifact.parts[0])).toMatchObject({
      filename: 'output.txt',
      mediaType: 'text/plain',
    });
  });
});

describe('SubscribeToTask', () => {
  /** A subscription whose first event has arrived, and the rest of it until it ends. */
  async function subscribed(taskId: string) {
    const stream = kit.resubscribeTask({ tenant: '', id: taskId })[Symbol.asyncIterator]();
    const first = await stream.next();
    const rest = (async () => {
      const events = [first.value as StreamResponse];
      for (let next = await stream.next(); !next.done; next = await stream.next())
        events.push(next.value);
      return events;
    })();
    return { first: first.value as StreamResponse, rest };
  }

  it('on a task waiting for input: the task, then the follow-up’s changes, ending at completed', async () => {
    const asked: any = await kit.sendMessage(request('tck-input-required'));
    const [one, two] = await Promise.all([subscribed(asked.id), subscribed(asked.id)]);
    expect(one.first.payload?.$case).toBe('task');
    expect(stateOf(one.first)).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    const done: any = await kit.sendMessage(request('tck-complete-task', { taskId: asked.id }));
    expect(done.status.state).toBe(TaskState.TASK_STATE_COMPLETED);
    const [oneEvents, twoEvents] = await Promise.all([one.rest, two.rest]);
    expect(stateOf(oneEvents.at(-1)!)).toBe(TaskState.TASK_STATE_COMPLETED);
    // Every subscriber gets the same events in the same order (the kit's STREAM-ORDER-003).
    expect(twoEvents.map((e) => e.payload?.$case)).toEqual(oneEvents.map((e) => e.payload?.$case));
    expect(twoEvents.map(stateOf)).toEqual(oneEvents.map(stateOf));
  });

  it('on a terminal task: UnsupportedOperationError', async () => {
    const done: any = await kit.sendMessage(request('tck-complete-task'));
    const err = await rejection(drain(kit.resubscribeTask({ tenant: '', id: done.id })));
    expect(codeOf(err)).toBe(-32004);
  });
});

describe('push notifications', () => {
  it('a config sent with the first message is called with its authentication once a follow-up completes the task', async () => {
    const start = request('tck-input-required');
    start.configuration!.taskPushNotificationConfig = {
      tenant: '',
      id: '',
      taskId: '',
      url: r.url,
      token: '',
      authentication: { scheme: 'Bearer', credentials: 'tck-test-token' },
    };
    const asked: any = await kit.sendMessage(start);
    await kit.sendMessage(request('tck-complete-task', { taskId: asked.id }));
    const mine = () =>
      r.received.filter((g) => (g.json.task?.id ?? g.json.statusUpdate?.taskId) === asked.id);
    const last = await eventually(async () =>
      mine().find((g) => g.json.task?.status?.state === 'TASK_STATE_COMPLETED'),
    );
    expect(last.headers.authorization).toBe('Bearer tck-test-token');
    expect(last.json.task.artifacts[0].parts).toEqual([{ text: 'Hello from TCK' }]);
    for (const got of mine()) expect(got.headers.authorization).toBe('Bearer tck-test-token');
  });

  it('configs are created, read by the id given back, listed and deleted twice', async () => {
    const done: any = await kit.sendMessage(request('tck-complete-task'));
    const config = {
      tenant: '',
      id: '',
      taskId: done.id,
      url: r.url,
      token: '',
      authentication: undefined,
    };
    const created = await kit.createTaskPushNotificationConfig(config);
    expect(created).toMatchObject({ taskId: done.id, url: r.url });
    const got = await kit.getTaskPushNotificationConfig({
      tenant: '',
      taskId: done.id,
      id: created.id,
    });
    expect(got.id).toBe(created.id);
    const listed = await kit.listTaskPushNotificationConfig({
      tenant: '',
      taskId: done.id,
      pageSize: 0,
      pageToken: '',
    });
    expect(listed.configs.map((c) => c.id)).toEqual([created.id]);
    for (let i = 0; i < 2; i++)
      await kit.deleteTaskPushNotificationConfig({ tenant: '', taskId: done.id, id: created.id });
  });
});
