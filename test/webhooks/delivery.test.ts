import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, startTestApp, type TestApp } from '../helpers/app.js';
import { type Receiver, startReceiver, verify } from '../helpers/receiver.js';

/** Webhooks (DESIGN §11) delivered to real loopback receivers, signatures checked. */

const START = `mutation($input: StartTaskInput!) { startTask(input: $input) { id version status } }`;
const WEBHOOKS = `query($id: ID!) { task(id: $id) { status version
  webhooks { id url secret createdAt }
  deliveries(first: 100) { id webhookId version status state attempts lastStatusCode lastError nextAttemptAt deliveredAt } } }`;
const ANSWER = `mutation($id: ID!, $value: JSON!) { provideTaskInput(id: $id, key: "decision", value: $value) { id status } }`;

describe('webhooks: delivery', () => {
  let t: TestApp;
  let alice: string;
  const receivers: Receiver[] = [];
  const receiver = async (...args: Parameters<typeof startReceiver>) => {
    const r = await startReceiver(...args);
    receivers.push(r);
    return r;
  };
  beforeAll(async () => {
    t = await startTestApp({
      env: {
        WEBHOOK_ALLOW_PRIVATE: 'true',
        WEBHOOK_RETRY_SCHEDULE_MS: '20,20,20',
        WEBHOOK_TIMEOUT_MS: '2000',
        WEBHOOK_POLL_INTERVAL_MS: '50',
      },
    });
    alice = await t.token('alice');
  });
  afterAll(async () => {
    await t?.stop();
    await Promise.all(receivers.map((r) => r.close()));
  });

  async function start(input: Record<string, unknown>) {
    const res = await t.gql(START, { input }, alice);
    expect(res.errors).toBeUndefined();
    return res.data.startTask as { id: string; version: number };
  }
  const view = async (id: string) => (await t.gql(WEBHOOKS, { id }, alice)).data.task;
  /** The task's deliveries once none is pending any more, oldest first. */
  const settled = (id: string, count: number) =>
    eventually(async () => {
      const task = await view(id);
      const done = task.deliveries.filter((d: any) => d.state !== 'PENDING');
      return task.deliveries.length === count && done.length === count
        ? [...task.deliveries].reverse()
        : undefined;
    });

  it('pushes every status change, from the first, signed with the webhook secret', async () => {
    const r = await receiver();
    const task = await start({
      kind: 'sleep',
      input: { ms: 0, steps: 3 },
      webhook: { url: r.url },
    });
    const got = await r.waitFor(2);
    const { webhooks } = await view(task.id);
    expect(webhooks).toHaveLength(1);
    const [hook] = webhooks;
    expect(hook.url).toBe(r.url);
    expect(hook.secret).toMatch(/^whsec_[A-Za-z0-9+/]+={0,2}$/);
    expect(Buffer.from(hook.secret.slice(6), 'base64').length).toBeGreaterThanOrEqual(24);
    for (const request of got) {
      expect(() => verify(hook.secret, request)).not.toThrow();
      expect(request.headers['content-type']).toBe('application/json');
      expect(request.headers['webhook-timestamp']).toMatch(/^\d+$/);
    }
    // Progress alone sends nothing: working (v1), then completed.
    expect(got.map((g) => [g.json.data.status, g.json.version])).toEqual([
      ['working', 1],
      ['completed', expect.any(Number)],
    ]);
    expect(got[0]!.json).toMatchObject({
      type: 'task.status',
      timestamp: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      data: { resultType: 'task', taskId: task.id, status: 'working', ttlMs: expect.any(Number) },
    });
    expect(got[1]!.json.data.result).toEqual({ sleptMs: expect.any(Number) });
    const deliveries = await settled(task.id, 2);
    expect(deliveries.map((d: any) => d.id)).toEqual(got.map((g) => g.headers['webhook-id']));
    expect(deliveries[1]).toMatchObject({
      webhookId: hook.id,
      status: 'completed',
      state: 'DELIVERED',
      attempts: 1,
      lastStatusCode: 200,
      lastError: null,
      nextAttemptAt: null,
      deliveredAt: expect.any(String),
    });
  });

  it('delivers in version order: the next change waits until the previous is delivered', async () => {
    // The first attempt fails, so version 1 is delivered on the retry; nothing later may overtake it.
    const r = await receiver((_req, n) => (n === 0 ? 503 : 200));
    const task = await start({
      kind: 'approval',
      input: { question: 'ok?' },
      webhook: { url: r.url },
    });
    await eventually(async () =>
      (await view(task.id)).status === 'INPUT_REQUIRED' ? true : undefined,
    );
    await t.gql(ANSWER, { id: task.id, value: { approved: true } }, alice);
    const got = await r.waitFor(5);
    expect(got.map((g) => g.json.data.status)).toEqual([
      'working',
      'working',
      'input_required',
      'working',
      'completed',
    ]);
    const versions = got.map((g) => g.json.version);
    expect(versions[0]).toBe(1);
    expect(versions[1]).toBe(1);
    for (let i = 2; i < versions.length; i++) expect(versions[i]).toBeGreaterThan(versions[i - 1]);
    const inputRequired = got[2]!.json.data;
    expect(inputRequired.inputRequest).toMatchObject({ key: 'decision', message: 'ok?' });
  });

  it('retries with the same webhook-id, then succeeds; the delivery counts its attempts', async () => {
    const r = await receiver((_req, n) => (n < 2 ? 500 : 204));
    const task = await start({
      kind: 'approval',
      input: { question: 'q' },
      webhook: { url: r.url },
    });
    const got = await r.waitFor(3);
    const ids = new Set(got.slice(0, 3).map((g) => g.headers['webhook-id']));
    expect(ids.size).toBe(1);
    const { webhooks } = await view(task.id);
    for (const g of got.slice(0, 3)) expect(() => verify(webhooks[0].secret, g)).not.toThrow();
    const [first] = await settled(task.id, 2);
    expect(first).toMatchObject({
      version: 1,
      state: 'DELIVERED',
      attempts: 3,
      lastStatusCode: 204,
    });
  });

  it('fails a delivery after 1 + the schedule’s entries attempts, and the next one goes on', async () => {
    const r = await receiver((req) => (req.json.data.status === 'working' ? 500 : 200));
    const task = await start({
      kind: 'approval',
      input: { question: 'q' },
      webhook: { url: r.url },
    });
    const [first, second] = await settled(task.id, 2);
    expect(first).toMatchObject({
      version: 1,
      state: 'FAILED',
      attempts: 4,
      lastStatusCode: 500,
      lastError: 'answered 500',
      nextAttemptAt: null,
      deliveredAt: null,
    });
    expect(second).toMatchObject({ status: 'input_required', state: 'DELIVERED', attempts: 1 });
  });

  it('counts a receiver that does not answer within WEBHOOK_TIMEOUT_MS as a failed attempt', async () => {
    const r = await receiver((_req, n) => (n === 0 ? undefined : 200));
    const task = await start({
      kind: 'approval',
      input: { question: 'q' },
      webhook: { url: r.url },
    });
    const [first] = await settled(task.id, 2);
    expect(first).toMatchObject({ state: 'DELIVERED', attempts: 2, lastStatusCode: 200 });
    const got = await r.waitFor(2);
    expect(got[0]!.headers['webhook-id']).toBe(got[1]!.headers['webhook-id']);
  });

  it('never follows a redirect: it is a failed attempt like any other answer', async () => {
    const r = await receiver((req, _n, res) => {
      if (req.path !== '/hook') return 200;
      res.writeHead(307, { location: '/elsewhere' }).end();
      return 'handled';
    });
    const task = await start({
      kind: 'approval',
      input: { question: 'q' },
      webhook: { url: r.url },
    });
    const deliveries = await settled(task.id, 2);
    expect(deliveries[0]).toMatchObject({
      state: 'FAILED',
      attempts: 4,
      lastStatusCode: 307,
      lastError: 'redirect 307 (not followed)',
    });
    expect(r.received.every((g) => g.path === '/hook')).toBe(true);
  });

  it('disables a webhook that answers 410 Gone: that delivery and its pending ones fail, later changes send nothing', async () => {
    const r = await receiver(() => 410);
    const task = await start({
      kind: 'approval',
      input: { question: 'q' },
      webhook: { url: r.url },
    });
    // Once waiting for input, the task has made both of its deliveries (or the 410 came first
    // and the second was never made): none may stay pending.
    const before = await eventually(async () => {
      const v = await view(task.id);
      const done =
        v.status === 'INPUT_REQUIRED' && v.deliveries.every((d: any) => d.state !== 'PENDING');
      return done ? [...v.deliveries].reverse() : undefined;
    });
    expect(before[0]).toMatchObject({ state: 'FAILED', attempts: 1, lastStatusCode: 410 });
    for (const later of before.slice(1))
      expect(later).toMatchObject({
        state: 'FAILED',
        attempts: 0,
        lastError: expect.stringContaining('410'),
      });
    await t.gql(ANSWER, { id: task.id, value: { approved: false } }, alice);
    const after = await eventually(async () => {
      const v = await view(task.id);
      return v.status === 'COMPLETED' ? v : undefined;
    });
    expect(after.deliveries).toHaveLength(before.length);
    expect(r.received).toHaveLength(1);
  });

  it('uses the secret given at start, and refuses one that is not whsec_ + base64 of 24..64 bytes', async () => {
    const r = await receiver();
    const secret = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
    const task = await start({
      kind: 'approval',
      input: { question: 'q' },
      webhook: { url: r.url, secret },
    });
    const [got] = await r.waitFor(1);
    expect(() => verify(secret, got!)).not.toThrow();
    expect((await view(task.id)).webhooks[0].secret).toBe(secret);
    for (const bad of [
      'whsec_',
      `whsec_${Buffer.alloc(23).toString('base64')}`,
      `whsec_${Buffer.alloc(65).toString('base64')}`,
      Buffer.alloc(32).toString('base64'),
      'whsec_not base64!',
    ]) {
      const res = await t.gql(
        START,
        { input: { kind: 'sleep', input: { ms: 0 }, webhook: { url: r.url, secret: bad } } },
        alice,
      );
      expect(res.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
    }
  });
});
