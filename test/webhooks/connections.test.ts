import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, startTestApp, type TestApp } from '../helpers/app.js';
import { type Receiver, startReceiver } from '../helpers/receiver.js';

/**
 * Webhook connections (DESIGN §11): a process keeps connections to a receiver open between
 * attempts, and a kept connection the receiver has closed meanwhile costs no attempt.
 */

const START = `mutation($input: StartTaskInput!) { startTask(input: $input) { id } }`;
const DELIVERIES = `query($id: ID!) { task(id: $id) { deliveries(first: 10) { state attempts } } }`;

describe('webhooks: connections', () => {
  let t: TestApp;
  let alice: string;
  const receivers: Receiver[] = [];
  beforeAll(async () => {
    t = await startTestApp({
      env: { WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_RETRY_SCHEDULE_MS: '60000' },
    });
    alice = await t.token('alice');
  });
  afterAll(async () => {
    await t?.stop();
    await Promise.all(receivers.map((r) => r.close()));
  });

  /** Starts `tasks` no-wait sleeps one after another, each once the last one's two deliveries arrived. */
  async function deliverInTurn(r: Receiver, tasks: number): Promise<string[]> {
    const ids: string[] = [];
    for (let i = 0; i < tasks; i++) {
      const input = { kind: 'sleep', input: { ms: 0 }, webhook: { url: r.url } };
      const res = await t.gql(START, { input }, alice);
      expect(res.errors).toBeUndefined();
      ids.push(res.data.startTask.id);
      await r.waitFor(2 * (i + 1));
    }
    return ids;
  }

  it('sends one receiver its deliveries over one kept connection', async () => {
    const r = await startReceiver();
    receivers.push(r);
    await deliverInTurn(r, 5);
    expect(r.received).toHaveLength(10);
    expect(r.connections).toBe(1);
  });

  it('sends again on a new connection when the kept one was closed under it: no attempt lost', async () => {
    // A receiver that resets a connection as the second request arrives on it, as one whose
    // keep-alive timed out in that very moment would: that request never reaches it.
    const perSocket = new WeakMap<object, number>();
    const delivered: string[] = [];
    const server = createServer((req, res) => {
      const n = (perSocket.get(req.socket) ?? 0) + 1;
      perSocket.set(req.socket, n);
      if (n === 2) {
        req.socket.destroy();
        return;
      }
      req.resume();
      req.on('end', () => {
        delivered.push(String(req.headers['webhook-id']));
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
    try {
      for (let i = 0; i < 3; i++) {
        const input = { kind: 'sleep', input: { ms: 0 }, webhook: { url } };
        const res = await t.gql(START, { input }, alice);
        expect(res.errors).toBeUndefined();
        const id = res.data.startTask.id as string;
        const deliveries = await eventually(async () => {
          const { data } = await t.gql(DELIVERIES, { id }, alice);
          const all = data.task.deliveries as Array<{ state: string; attempts: number }>;
          return all.length === 2 && all.every((d) => d.state !== 'PENDING') ? all : undefined;
        });
        expect(deliveries).toEqual([
          { state: 'DELIVERED', attempts: 1 },
          { state: 'DELIVERED', attempts: 1 },
        ]);
      }
      expect(new Set(delivered).size).toBe(6);
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
