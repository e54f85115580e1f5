import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, type TaskhandleClient } from '../../src/client/index.js';
import type { sleep } from '../../src/kinds/sleep.js';
import { eventually } from '../helpers/app.js';
import { type ClientServer, startClientServer } from '../helpers/client-server.js';

/** `result()` outlives its server: a restart in the middle, and no WebSocket at all. */

type Kinds = { sleep: typeof sleep };
let server: ClientServer;
let token: string;

beforeAll(async () => {
  // A short lease: the task killed with its server runs again soon after the restart.
  server = await startClientServer({ TASK_LEASE_MS: '1500' });
  token = await server.token('alice');
}, 300_000);
afterAll(async () => {
  await server?.close();
});

describe('result() across a server restart', { timeout: 300_000 }, () => {
  it('keeps following while the server is killed and started again, and resolves', async () => {
    const client = createClient<Kinds>({ url: server.url, token });
    try {
      const t = await client.start('sleep', { ms: 2_000, steps: 4 });
      let settled = false;
      const result = t.result().finally(() => (settled = true));
      // Running in the server (progress reported) before it dies.
      await eventually(async () => ((t.task?.progress ?? 0) > 0 ? true : undefined), 60_000);
      expect((await server.process.stop('SIGKILL')).signal).toBe('SIGKILL');
      expect(settled).toBe(false);
      await server.restart();
      expect((await result).sleptMs).toBeGreaterThanOrEqual(2_000);
      expect(t.status).toBe('COMPLETED');
    } finally {
      await client.close();
    }
  });
});

describe('without a WebSocket', { timeout: 120_000 }, () => {
  let proxy: Server;
  let refused = 0;
  let forwarded = 0;
  let client: TaskhandleClient<Kinds>;

  beforeAll(async () => {
    // Plain HTTP passes; every WebSocket upgrade is refused, as by a proxy that blocks them.
    proxy = createServer((req, res) => {
      forwarded++;
      const upstream = request(
        {
          host: '127.0.0.1',
          port: server.port,
          path: req.url,
          method: req.method,
          headers: req.headers,
        },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.once('error', () => res.destroy());
          answer.pipe(res);
        },
      );
      // Cut before its answer began: 502; after: the client sees the answer cut, as it was.
      upstream.once('error', () => (res.headersSent ? res.destroy() : res.writeHead(502).end()));
      req.pipe(upstream);
    });
    proxy.on('upgrade', (_req, socket) => {
      refused++;
      socket.destroy();
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    const { port } = proxy.address() as AddressInfo;
    client = createClient<Kinds>({ url: `http://127.0.0.1:${port}`, token });
  });
  afterAll(async () => {
    await client?.close();
    await new Promise((resolve) => proxy?.close(resolve));
  });

  it('falls back to polls at pollIntervalMs and still resolves', async () => {
    const t = await client.start('sleep', { ms: 1_500 });
    expect(t.task?.pollIntervalMs).toBe(1_000);
    const before = forwarded;
    expect((await t.result()).sleptMs).toBeGreaterThanOrEqual(1_500);
    expect(refused).toBeGreaterThan(0);
    expect(forwarded - before).toBeGreaterThan(1);
  });
});
