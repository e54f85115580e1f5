import type { TaskPushNotificationConfig } from '@a2a-js/sdk';
import type { Client } from '@a2a-js/sdk/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { prepareWebhook } from '../../src/tasks/webhooks/rules.js';
import { withRoomForWebhook } from '../../src/tasks/webhooks/store.js';
import { a2aClient, answerRequest, startRequest } from '../helpers/a2a.js';
import { eventually, startTestApp, type TestApp } from '../helpers/app.js';
import { type Receiver, startReceiver } from '../helpers/receiver.js';

/**
 * A webhook that replaces another by its client's config id (DESIGN §11, migration 0011):
 * the one replaced goes with its deliveries, pending ones included, and the new one reports
 * the changes after it was attached, to its own URL.
 */

const V1 = { serviceParameters: { 'A2A-Version': '1.0' } } as any;
const VIEW = `query($id: ID!) { task(id: $id) { status webhooks { id url }
  deliveries(first: 100) { webhookId version state attempts lastStatusCode } } }`;

describe('webhooks: replaced by config id', () => {
  let t: TestApp;
  let failing: Receiver;
  let working: Receiver;
  let alice: Client;
  let token: string;
  beforeAll(async () => {
    t = await startTestApp({
      env: {
        WEBHOOK_ALLOW_PRIVATE: 'true',
        WEBHOOK_POLL_INTERVAL_MS: '50',
        // A failed attempt waits long for its retry: its delivery stays pending for the test.
        WEBHOOK_RETRY_SCHEDULE_MS: '600000',
      },
    });
    failing = await startReceiver(() => 503);
    working = await startReceiver();
    token = await t.token('alice');
    alice = await a2aClient(t.url, token);
  });
  afterAll(async () => {
    await t?.stop();
    await failing?.close();
    await working?.close();
  });
  const view = async (id: string) => (await t.gql(VIEW, { id }, token)).data.task;
  const config = (taskId: string, url: string): TaskPushNotificationConfig => ({
    tenant: '',
    id: 'hook',
    taskId,
    url,
    token: '',
    authentication: undefined,
  });

  it('the replaced webhook’s pending deliveries go with it; the new one gets the next changes', async () => {
    const start = startRequest('approval', { question: 'go?' });
    start.configuration!.taskPushNotificationConfig = config('', failing.url);
    const task: any = await alice.sendMessage(start);
    const before = await eventually(async () => {
      const now = await view(task.id);
      const tried = now.deliveries.some((d: any) => d.lastStatusCode === 503);
      return now.status === 'INPUT_REQUIRED' && tried ? now : undefined;
    });
    const [old] = before.webhooks;
    expect(before.deliveries.every((d: any) => d.webhookId === old.id)).toBe(true);
    expect(before.deliveries.some((d: any) => d.state === 'PENDING')).toBe(true);

    await alice.transport.createTaskPushNotificationConfig(config(task.id, working.url), V1);
    const replaced = await view(task.id);
    expect(replaced.webhooks).toEqual([{ id: expect.any(String), url: working.url }]);
    expect(replaced.webhooks[0].id).not.toBe(old.id);
    expect(replaced.deliveries).toEqual([]);

    await alice.sendMessage(answerRequest(task.id, { approved: true }));
    const got = await eventually(async () => {
      const mine = working.received.filter(
        (g) => g.json.statusUpdate?.taskId === task.id || g.json.task?.id === task.id,
      );
      return mine.some((g) => g.json.task) ? mine : undefined;
    });
    expect(got.map((g) => g.json.statusUpdate?.status.state ?? g.json.task.status.state)).toEqual([
      'TASK_STATE_WORKING',
      'TASK_STATE_COMPLETED',
    ]);
    const after = await view(task.id);
    expect(after.deliveries.every((d: any) => d.webhookId === replaced.webhooks[0].id)).toBe(true);
  });

  it('a write that changes nothing replaces nothing: the transaction rolls back', async () => {
    const task: any = await alice.sendMessage(startRequest('approval', { question: 'go?' }));
    await alice.transport.createTaskPushNotificationConfig(config(task.id, working.url), V1);
    const db = t.app.db.kysely;
    const { owner } = await db
      .selectFrom('tasks')
      .select('owner')
      .where('id', '=', task.id)
      .executeTakeFirstOrThrow();
    const webhook = prepareWebhook({ url: failing.url, format: 'a2a', configId: 'hook' }, true);
    expect(await withRoomForWebhook(db, task.id, owner, webhook, async () => undefined)).toBe(
      undefined,
    );
    expect((await view(task.id)).webhooks).toEqual([{ id: expect.any(String), url: working.url }]);
  });

  it('concurrent answers bringing one config id: one answer counts, and its config is the one kept', async () => {
    const task: any = await alice.sendMessage(startRequest('approval', { question: 'go?' }));
    await eventually(async () =>
      (await view(task.id)).status === 'INPUT_REQUIRED' ? true : undefined,
    );
    const urls = [1, 2, 3, 4].map((n) => `${working.url}?answer=${n}`);
    const outcomes = await Promise.allSettled(
      urls.map((url) => {
        const answer = answerRequest(task.id, { approved: true });
        answer.configuration!.taskPushNotificationConfig = config(task.id, url);
        return alice.sendMessage(answer);
      }),
    );
    const won = outcomes.flatMap((o, i) => (o.status === 'fulfilled' ? [urls[i]] : []));
    expect(won).toHaveLength(1);
    expect((await view(task.id)).webhooks).toEqual([{ id: expect.any(String), url: won[0] }]);
  });
});
