import type { TaskPushNotificationConfig } from '@a2a-js/sdk';
import type { Client } from '@a2a-js/sdk/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { a2aClient, answerRequest, codeOf, rejection, startRequest } from '../../helpers/a2a.js';
import { eventually, startTestApp, type TestApp } from '../../helpers/app.js';
import { type Receiver, startReceiver, verify } from '../../helpers/receiver.js';

/**
 * Push config ids a client proposes (DESIGN §10, §11), as the @a2a-js/sdk client sends them:
 * the config keeps the id, answers Get, List and Delete by it, and a second config with the
 * same id on the same task replaces the first, as the reference SDKs' stores do.
 */

const V1 = { serviceParameters: { 'A2A-Version': '1.0' } } as any;
const VIEW = `query($id: ID!) { task(id: $id) { status webhooks { id url secret } deliveries { webhookId state } } }`;

let t: TestApp;
let r: Receiver;
let alice: Client;
let aliceToken: string;
const config = (
  taskId: string,
  id: string,
  extra: Partial<TaskPushNotificationConfig> = {},
): TaskPushNotificationConfig => ({
  tenant: '',
  id,
  taskId,
  url: r.url,
  token: 'tok-1',
  authentication: undefined,
  ...extra,
});
const ref = (taskId: string, id: string) => ({ tenant: '', taskId, id });

beforeAll(async () => {
  t = await startTestApp({
    env: { WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_POLL_INTERVAL_MS: '50' },
  });
  r = await startReceiver();
  aliceToken = await t.token('alice');
  alice = await a2aClient(t.url, aliceToken);
});
afterAll(async () => {
  await t?.stop();
  await r?.close();
});

const view = async (id: string) => (await t.gql(VIEW, { id }, aliceToken)).data.task;
const configsOf = async (taskId: string) =>
  (
    await alice.transport.listTaskPushNotificationConfig(
      { tenant: '', taskId, pageSize: 10, pageToken: '' },
      V1,
    )
  ).configs;
/** A task of the approval kind, once it waits for its answer. */
async function waiting(): Promise<string> {
  const task: any = await alice.sendMessage(startRequest('approval', { question: 'go?' }));
  await eventually(async () =>
    (await view(task.id)).status === 'INPUT_REQUIRED' ? true : undefined,
  );
  return task.id;
}

describe('push config ids a client proposes', () => {
  it('are kept: Get, List and Delete answer by them, and a deleted config is not pushed to', async () => {
    const taskId = await waiting();
    const created = await alice.transport.createTaskPushNotificationConfig(
      config(taskId, 'my-hook'),
      V1,
    );
    expect(created).toMatchObject({ id: 'my-hook', taskId, url: r.url, token: 'tok-1' });
    expect(await alice.transport.getTaskPushNotificationConfig(ref(taskId, 'my-hook'), V1)).toEqual(
      created,
    );
    expect(await configsOf(taskId)).toEqual([created]);
    // A webhook like any other: its own id and the secret the server made, on Task.webhooks.
    const [webhook] = (await view(taskId)).webhooks;
    expect(webhook.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(webhook.secret).toMatch(/^whsec_/);
    // Ids are compared as written.
    const other = await rejection(
      alice.transport.getTaskPushNotificationConfig(ref(taskId, 'MY-HOOK'), V1),
    );
    expect(codeOf(other)).toBe(-32001);

    await alice.transport.deleteTaskPushNotificationConfig(ref(taskId, 'my-hook'), V1);
    const gone = await rejection(
      alice.transport.getTaskPushNotificationConfig(ref(taskId, 'my-hook'), V1),
    );
    expect(codeOf(gone)).toBe(-32001);
    // Deliveries are written with the change they report: none for a config that is gone.
    await alice.sendMessage(answerRequest(taskId, { approved: true }));
    expect(await view(taskId)).toMatchObject({ webhooks: [], deliveries: [] });
  });

  it('the same id on the same task replaces the config, which is never a sixth; on another task it is another config', async () => {
    const taskId = await waiting();
    for (const id of ['a', 'b', 'c', 'd', 'e'])
      await alice.transport.createTaskPushNotificationConfig(config(taskId, id), V1);
    const replaced = await alice.transport.createTaskPushNotificationConfig(
      config(taskId, 'c', { url: `${r.url}?v=2`, token: 'tok-2' }),
      V1,
    );
    expect(replaced).toMatchObject({ id: 'c', url: `${r.url}?v=2`, token: 'tok-2' });
    const configs = await configsOf(taskId);
    expect(configs.map((c) => c.id).sort()).toEqual(['a', 'b', 'c', 'd', 'e']);
    expect(configs.find((c) => c.id === 'c')).toEqual(replaced);
    expect((await view(taskId)).webhooks).toHaveLength(5);
    const sixth = await rejection(
      alice.transport.createTaskPushNotificationConfig(config(taskId, 'f'), V1),
    );
    expect(codeOf(sixth)).toBe(-32602);

    const second = await waiting();
    await alice.transport.createTaskPushNotificationConfig(config(second, 'c'), V1);
    expect((await configsOf(second)).map((c) => c.url)).toEqual([r.url]);
    expect((await configsOf(taskId)).find((c) => c.id === 'c')?.url).toBe(`${r.url}?v=2`);
  });

  it('concurrent creates with one id leave one config', async () => {
    const taskId = await waiting();
    const urls = [0, 1, 2, 3, 4, 5, 6].map((n) => `${r.url}?n=${n}`);
    const made = await Promise.all(
      urls.map((url) =>
        alice.transport.createTaskPushNotificationConfig(config(taskId, 'same', { url }), V1),
      ),
    );
    expect(made.every((c) => c.id === 'same')).toBe(true);
    const configs = await configsOf(taskId);
    expect(configs).toHaveLength(1);
    expect(urls).toContain(configs[0]!.url);
  });

  it('a config given with SendMessage keeps its id too, and is pushed to, signed', async () => {
    const request = startRequest('sleep', { ms: 0 });
    request.configuration!.taskPushNotificationConfig = config('', 'on-start', {
      url: `${r.url}?on-start`,
    });
    const task: any = await alice.sendMessage(request);
    const got = await alice.transport.getTaskPushNotificationConfig(ref(task.id, 'on-start'), V1);
    expect(got).toMatchObject({ id: 'on-start', taskId: task.id, url: `${r.url}?on-start` });
    const pushed = await eventually(async () =>
      r.received.find((g) => g.path === '/hook?on-start' && g.json.task?.id === task.id),
    );
    const [webhook] = (await view(task.id)).webhooks;
    expect(() => verify(webhook.secret, pushed)).not.toThrow();
  });

  it('an answer whose config has a known id replaces it; a refused answer replaces nothing', async () => {
    const taskId = await waiting();
    await alice.transport.createTaskPushNotificationConfig(config(taskId, 'hook'), V1);

    const refused = answerRequest(taskId, { approved: 'not a boolean' });
    refused.configuration!.taskPushNotificationConfig = config(taskId, 'hook', {
      url: `${r.url}?refused`,
    });
    expect(codeOf(await rejection(alice.sendMessage(refused)))).toBe(-32602);
    expect((await configsOf(taskId)).map((c) => c.url)).toEqual([r.url]);

    const answer = answerRequest(taskId, { approved: true });
    answer.configuration!.taskPushNotificationConfig = config(taskId, 'hook', {
      url: `${r.url}?answered`,
    });
    await alice.sendMessage(answer);
    expect((await configsOf(taskId)).map((c) => [c.id, c.url])).toEqual([
      ['hook', `${r.url}?answered`],
    ]);
    const done = await eventually(async () =>
      r.received.find((g) => g.path === '/hook?answered' && g.json.task?.id === taskId),
    );
    expect(done.json.task.status.state).toBe('TASK_STATE_COMPLETED');
  });

  it('an id of more than 255 characters, or not printable ASCII, is -32602; nothing is stored', async () => {
    const taskId = await waiting();
    for (const id of ['x'.repeat(256), 'tab\there', 'café']) {
      const err = await rejection(
        alice.transport.createTaskPushNotificationConfig(config(taskId, id), V1),
      );
      expect(codeOf(err), id).toBe(-32602);
    }
    expect(await configsOf(taskId)).toEqual([]);
    const longest = await alice.transport.createTaskPushNotificationConfig(
      config(taskId, 'x'.repeat(255)),
      V1,
    );
    expect(longest.id).toBe('x'.repeat(255));
  });
});
