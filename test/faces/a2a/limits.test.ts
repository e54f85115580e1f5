import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UNKNOWN_ID } from '../../helpers/a2a.js';
import { startTestApp, type TestApp } from '../../helpers/app.js';
import { rest } from '../../helpers/rest.js';

/**
 * DESIGN §12 on the A2A face: a limit is the HTTP layer's to say, `429` + `Retry-After` as a
 * problem document, not a JSON-RPC error — for a plain call and before a stream's first event.
 */

let t: TestApp;
beforeAll(async () => {
  // One token every 1 000 s: nothing refills while a test runs, however slow the machine.
  t = await startTestApp({ env: { RATE_LIMIT_RPS: '0.001', RATE_LIMIT_BURST: '1' } });
});
afterAll(() => t?.stop());

const rpc = (token: string, method: string) =>
  rest(t.url, 'POST', '/a2a', {
    token,
    body: { jsonrpc: '2.0', id: 1, method, params: { id: UNKNOWN_ID } },
    headers: { 'a2a-version': '1.0' },
  });

async function expectRateLimited(res: Awaited<ReturnType<typeof rpc>>) {
  expect(res.status, res.text).toBe(429);
  expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  expect(res.body).toMatchObject({ status: 429, code: 'RATE_LIMITED' });
  expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
}

describe('past the burst', () => {
  it('answers a call 429 with Retry-After', async () => {
    const alice = await t.token('alice');
    const first = await rpc(alice, 'GetTask');
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ error: { code: -32001 } });
    await expectRateLimited(await rpc(alice, 'GetTask'));
  });

  it('answers a stream 429 with Retry-After before its first event', async () => {
    const bob = await t.token('bob');
    expect((await rpc(bob, 'GetTask')).status).toBe(200);
    await expectRateLimited(await rpc(bob, 'SubscribeToTask'));
  });
});
