import type { Client } from '@a2a-js/sdk/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { a2aClient, answerRequest, codeOf, rejection, startRequest } from '../../helpers/a2a.js';
import { eventually, startTestApp, type TestApp } from '../../helpers/app.js';
import { type Receiver, startReceiver, verify } from '../../helpers/receiver.js';

/** A2A push notifications are §11's webhooks, driven with the @a2a-js/sdk client. */

const V1 = { serviceParameters: { 'A2A-Version': '1.0' } } as any;
const WEBHOOKS = `query($id: ID!) { task(id: $id) { status webhooks { id url secret } deliveries { state } } }`;

let t: TestApp;
let r: Receiver;
let alice: Client;
let bob: Client;
let aliceToken: string;
const config = (taskId: string, extra: Record<string, unknown> = {}) => ({
  tenant: '',
  id: '',
  taskId,
  url: r.url,
  token: 'tok-1',
  authentication: { scheme: 'Bearer', credentials: 'cred-1' },
  ...extra,
});

beforeAll(async () => {
  t = await startTestApp({
    env: { WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_POLL_INTERVAL_MS: '50' },
  });
  r = await startReceiver();
  aliceToken = await t.token('alice');
  alice = await a2aClient(t.url, aliceToken);
  bob = await a2aClient(t.url, await t.token('bob'));
});
afterAll(async () => {
  await t?.stop();
  await r?.close();
});

const bodiesFor = (taskId: string) =>
  r.received.filter((g) => g.json.statusUpdate?.taskId === taskId || g.json.task?.id === taskId);

describe('A2A push notifications', () => {
  it('the card says pushNotifications: true', async () => {
    const card = await (await fetch(`${t.url}/.well-known/agent-card.json`)).json();
    expect(card.capabilities).toEqual({ streaming: true, pushNotifications: true });
  });

  it('SendMessage with taskPushNotificationConfig pushes statusUpdates, then the whole task, with its token and authentication, signed', async () => {
    const request = startRequest('sleep', { ms: 0 });
    request.configuration!.taskPushNotificationConfig = config('');
    const task: any = await alice.sendMessage(request);
    const got = await eventually(async () => {
      const mine = bodiesFor(task.id);
      return mine.some((g) => g.json.task) ? mine : undefined;
    });
    const view = (await t.gql(WEBHOOKS, { id: task.id }, aliceToken)).data.task;
    expect(view.webhooks).toHaveLength(1);
    for (const g of got) {
      expect(g.headers['x-a2a-notification-token']).toBe('tok-1');
      expect(g.headers.authorization).toBe('Bearer cred-1');
      expect(() => verify(view.webhooks[0].secret, g)).not.toThrow();
    }
    expect(got[0]!.json.statusUpdate).toMatchObject({
      taskId: task.id,
      contextId: task.id,
      status: { state: 'TASK_STATE_WORKING' },
      metadata: { version: 1 },
    });
    const last = got.at(-1)!.json.task;
    expect(last).toMatchObject({ id: task.id, status: { state: 'TASK_STATE_COMPLETED' } });
    expect(last.artifacts[0].parts[0].data).toEqual({ sleptMs: expect.any(Number) });
  });

  it('a push config given with an answer reports the answer’s change and the rest; a refused answer keeps none', async () => {
    const asked: any = await alice.sendMessage(startRequest('approval', { question: 'q' }));
    await eventually(async () =>
      (await t.gql(WEBHOOKS, { id: asked.id }, aliceToken)).data.task.status === 'INPUT_REQUIRED'
        ? true
        : undefined,
    );
    const refused = answerRequest(asked.id, { approved: 'not a boolean' });
    refused.configuration!.taskPushNotificationConfig = config(asked.id);
    expect(codeOf(await rejection(alice.sendMessage(refused)))).toBe(-32602);
    expect((await t.gql(WEBHOOKS, { id: asked.id }, aliceToken)).data.task.webhooks).toEqual([]);

    const answer = answerRequest(asked.id, { approved: true });
    answer.configuration!.taskPushNotificationConfig = config(asked.id);
    await alice.sendMessage(answer);
    const got = await eventually(async () => {
      const mine = bodiesFor(asked.id);
      return mine.some((g) => g.json.task) ? mine : undefined;
    });
    expect(got[0]!.json.statusUpdate).toMatchObject({ status: { state: 'TASK_STATE_WORKING' } });
    expect(got.at(-1)!.json.task).toMatchObject({ status: { state: 'TASK_STATE_COMPLETED' } });
    expect(got.at(-1)!.json.task.artifacts[0].parts[0].data).toEqual({
      approved: true,
      comment: null,
    });
  });

  it('Create, Get, List and Delete manage the task’s webhooks; a config made later starts with the next change', async () => {
    const task: any = await alice.sendMessage(startRequest('approval', { question: 'go?' }));
    await eventually(async () =>
      (await t.gql(WEBHOOKS, { id: task.id }, aliceToken)).data.task.status === 'INPUT_REQUIRED'
        ? true
        : undefined,
    );
    const created = await alice.transport.createTaskPushNotificationConfig(config(task.id), V1);
    expect(created).toMatchObject({ taskId: task.id, url: r.url, token: 'tok-1' });
    expect(created.authentication).toEqual({ scheme: 'Bearer', credentials: 'cred-1' });
    expect(created.id).toMatch(/^[0-9a-f-]{36}$/);
    const got = await alice.transport.getTaskPushNotificationConfig(
      { tenant: '', taskId: task.id, id: created.id },
      V1,
    );
    expect(got).toEqual(created);
    const listed = await alice.transport.listTaskPushNotificationConfig(
      { tenant: '', taskId: task.id, pageSize: 10, pageToken: '' },
      V1,
    );
    expect(listed.configs).toEqual([created]);
    // Listed among the task's webhooks, with the secret the server made for it.
    const view = (await t.gql(WEBHOOKS, { id: task.id }, aliceToken)).data.task;
    expect(view.webhooks.map((w: any) => w.id)).toEqual([created.id]);

    await alice.sendMessage(answerRequest(task.id, { approved: true }));
    const pushed = await eventually(async () => {
      const mine = bodiesFor(task.id);
      return mine.some((g) => g.json.task) ? mine : undefined;
    });
    // Not the first states (working, input_required): from the answer on.
    expect(
      pushed.map((g) => g.json.statusUpdate?.status.state ?? g.json.task.status.state),
    ).toEqual(['TASK_STATE_WORKING', 'TASK_STATE_COMPLETED']);
    expect(pushed[0]!.json.statusUpdate.metadata.version).toBeGreaterThan(2);

    await alice.transport.deleteTaskPushNotificationConfig(
      { tenant: '', taskId: task.id, id: created.id },
      V1,
    );
    const gone = await rejection(
      alice.transport.getTaskPushNotificationConfig(
        { tenant: '', taskId: task.id, id: created.id },
        V1,
      ),
    );
    expect(codeOf(gone)).toBe(-32001);
    // The config's deliveries go with it.
    expect((await t.gql(WEBHOOKS, { id: task.id }, aliceToken)).data.task).toMatchObject({
      webhooks: [],
      deliveries: [],
    });
  });

  it('a sixth config is -32602; a bad URL is -32602; someone else’s task is TaskNotFoundError', async () => {
    const task: any = await alice.sendMessage(startRequest('approval', { question: 'q' }));
    for (let i = 0; i < 5; i++)
      await alice.transport.createTaskPushNotificationConfig(
        config(task.id, { url: `${r.url}?n=${i}` }),
        V1,
      );
    const sixth = await rejection(
      alice.transport.createTaskPushNotificationConfig(config(task.id), V1),
    );
    expect(codeOf(sixth)).toBe(-32602);
    const other: any = await alice.sendMessage(startRequest('approval', { question: 'q' }));
    const bad = await rejection(
      alice.transport.createTaskPushNotificationConfig(
        config(other.id, { url: 'ftp://example.test/' }),
        V1,
      ),
    );
    expect(codeOf(bad)).toBe(-32602);
    // Thunks, called one at a time: a rejection is always awaited as it happens.
    for (const call of [
      () => bob.transport.createTaskPushNotificationConfig(config(other.id), V1),
      () =>
        bob.transport.listTaskPushNotificationConfig(
          { tenant: '', taskId: other.id, pageSize: 10, pageToken: '' },
          V1,
        ),
      () =>
        bob.transport.getTaskPushNotificationConfig({ tenant: '', taskId: other.id, id: 'x' }, V1),
      () =>
        bob.transport.deleteTaskPushNotificationConfig(
          { tenant: '', taskId: other.id, id: 'x' },
          V1,
        ),
    ])
      expect(codeOf(await rejection(call()))).toBe(-32001);
    expect((await t.gql(WEBHOOKS, { id: other.id }, aliceToken)).data.task.webhooks).toEqual([]);
  });
});
