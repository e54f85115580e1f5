import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../../helpers/app.js';
import { hold } from '../../helpers/kinds.js';
import { TASKS, VERSION, v2, v2Result, WITH_TASKS } from '../../helpers/mcp-v2.js';

let t: TestApp;
let alice: string;
beforeAll(async () => {
  t = await startTestApp({ kinds: [hold] });
  alice = await t.token('alice');
});
afterAll(async () => {
  await t?.stop();
});

/** Opens a subscriptions/listen stream and reads its JSON-RPC messages one at a time. */
async function listen(token: string, taskIds: string[]) {
  const controller = new AbortController();
  const response = await fetch(`${t.url}/mcp`, {
    method: 'POST',
    signal: controller.signal,
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': VERSION,
      'mcp-method': 'subscriptions/listen',
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 'listen-1',
      method: 'subscriptions/listen',
      params: {
        notifications: { taskIds },
        _meta: {
          'io.modelcontextprotocol/protocolVersion': VERSION,
          'io.modelcontextprotocol/clientCapabilities': WITH_TASKS,
        },
      },
    }),
  });
  expect(response.headers.get('content-type')).toBe('text/event-stream');
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  let buffered = '';
  const pending: any[] = [];
  return {
    async next(): Promise<any> {
      while (pending.length === 0) {
        const { value, done } = await reader.read();
        if (done) throw new Error('the stream ended');
        buffered += decoder.decode(value, { stream: true });
        const events = buffered.split('\n\n');
        buffered = events.pop() ?? '';
        for (const event of events) {
          const data = event.split('\n').find((line) => line.startsWith('data: '));
          if (data) pending.push(JSON.parse(data.slice(6)));
        }
      }
      return pending.shift();
    },
    close: () => controller.abort(),
  };
}

describe('subscriptions/listen (2026-07-28)', () => {
  it('acknowledges only the caller’s tasks, then sends the DetailedTask on every change', async () => {
    const bob = await t.token('bob');
    const start = (token: string) =>
      v2Result(
        t.url,
        token,
        'tools/call',
        { name: 'hold', arguments: {} },
        {
          capabilities: WITH_TASKS,
        },
      );
    const mine = (await start(alice)).taskId;
    const theirs = (await start(bob)).taskId;
    const stream = await listen(alice, [mine, theirs, 'not-a-task']);
    try {
      const meta = { 'io.modelcontextprotocol/subscriptionId': 'listen-1' };
      expect(await stream.next()).toEqual({
        jsonrpc: '2.0',
        method: 'notifications/subscriptions/acknowledged',
        params: { notifications: { taskIds: [mine] }, _meta: meta },
      });
      expect(await stream.next()).toMatchObject({
        method: 'notifications/tasks',
        params: { taskId: mine, status: 'working', _meta: meta },
      });
      await v2Result(t.url, alice, 'tasks/cancel', { taskId: mine }, { capabilities: WITH_TASKS });
      const cancelled = await stream.next();
      expect(cancelled).toMatchObject({
        method: 'notifications/tasks',
        params: { taskId: mine, status: 'cancelled', _meta: meta },
      });
      expect(cancelled.params.result).toBeUndefined();
    } finally {
      stream.close();
      await v2(t.url, bob, 'tasks/cancel', { taskId: theirs }, { capabilities: WITH_TASKS });
    }
  });

  it('refuses task notifications to a request that does not declare the extension', async () => {
    const answer = await v2(t.url, alice, 'subscriptions/listen', {
      notifications: { taskIds: ['00000000-0000-4000-8000-000000000000'] },
    });
    expect(answer.status).toBe(400);
    expect(answer.body.error).toMatchObject({
      code: -32021,
      data: { requiredCapabilities: { extensions: { [TASKS]: {} } } },
    });
  });
});
