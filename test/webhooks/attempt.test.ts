import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import {
  type Agents,
  attempt,
  keepAliveAgents,
  MAX_RESPONSE_BYTES,
} from '../../src/webhook-delivery/attempt.js';
import { headersFor, signature } from '../../src/webhook-delivery/body.js';
import { verify } from '../helpers/receiver.js';

/**
 * One attempt (DESIGN §11) against real receivers on loopback: what is sent, and the limits
 * an answer is held to — its size, its time, a redirect, a stop.
 */

interface Serving {
  url: string;
  /** The connections the receiver accepted. */
  sockets: Socket[];
  /** Resolves once the first connection has closed. */
  closed: Promise<void>;
  server: Server;
}

const servers: Server[] = [];
let agents: Agents | undefined;
afterEach(async () => {
  agents?.http.destroy();
  agents?.https.destroy();
  agents = undefined;
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

async function serve(
  handle: (req: IncomingMessage, res: ServerResponse) => void,
): Promise<Serving> {
  const sockets: Socket[] = [];
  let onClose: () => void = () => {};
  const closed = new Promise<void>((resolve) => (onClose = resolve));
  const server = createServer(handle);
  server.on('connection', (socket: Socket) => {
    sockets.push(socket);
    socket.on('close', onClose);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  servers.push(server);
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook?x=1`;
  return { url, sockets, closed, server };
}

const send = (url: string, extra: { timeoutMs?: number; signal?: AbortSignal } = {}) =>
  attempt({
    url,
    headers: { 'content-type': 'application/json', 'webhook-id': 'msg_1' },
    body: '{"a":"é"}',
    timeoutMs: extra.timeoutMs ?? 5_000,
    allowPrivate: true,
    signal: extra.signal ?? new AbortController().signal,
    agents,
  });

describe('one webhook attempt', () => {
  it('sends the body, its length in bytes, the host and the headers given, to the path and query', async () => {
    let got:
      | { url?: string | undefined; headers: IncomingMessage['headers']; body: string }
      | undefined;
    const s = await serve((req, res) => {
      let body = '';
      req.setEncoding('utf8');
      req.on('data', (c: string) => (body += c));
      req.on('end', () => {
        got = { url: req.url, headers: req.headers, body };
        res.writeHead(204).end();
      });
    });
    expect(await send(s.url)).toEqual({ statusCode: 204 });
    expect(got!.url).toBe('/hook?x=1');
    expect(got!.body).toBe('{"a":"é"}');
    expect(got!.headers['content-length']).toBe(String(Buffer.byteLength('{"a":"é"}')));
    expect(got!.headers.host).toBe(new URL(s.url).host);
    expect(got!.headers['webhook-id']).toBe('msg_1');
  });

  it('signs what a Standard Webhooks receiver verifies, over the UTF-8 body', () => {
    const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
    const body = '{"type":"task.status","data":{"statusMessage":"déjà vu ✓"}}';
    const delivery = {
      id: 'a7d1c1b2-0000-4000-8000-000000000001',
      secret,
      token: null,
      auth_scheme: null,
      auth_credentials: null,
    };
    const headers = headersFor({ ...delivery, snapshot: {}, format: 'standard' }, body);
    expect(() => verify(secret, { path: '/', headers, body, json: undefined })).not.toThrow();
    // A different body, id or time does not verify with that signature.
    const seconds = Number(headers['webhook-timestamp']);
    expect(signature(secret, delivery.id, seconds, `${body} `)).not.toBe(
      headers['webhook-signature'],
    );
    expect(() =>
      verify(secret, { path: '/', headers, body: body.replace('✓', 'x'), json: undefined }),
    ).toThrow();
  });

  it('takes the status of an answer larger than the limit and closes its connection after the limit', async () => {
    let written = 0;
    const s = await serve((req, res) => {
      req.resume();
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      const chunk = Buffer.alloc(16 * 1024, 120);
      // Writes for as long as the connection is open: an answer that never ends by itself.
      const more = () => {
        while (!res.destroyed && res.write(chunk)) written += chunk.length;
        if (!res.destroyed) written += chunk.length;
      };
      res.on('drain', more);
      more();
    });
    agents = keepAliveAgents(4);
    expect(await send(s.url)).toEqual({ statusCode: 200 });
    await s.closed;
    // The receiver could have written on forever; the connection closed once the limit was read
    // (what sat in the socket buffers when it closed is the rest).
    expect(written).toBeGreaterThanOrEqual(MAX_RESPONSE_BYTES);
    expect(written).toBeLessThan(64 * MAX_RESPONSE_BYTES);
  });

  it('gives up on a receiver that does not answer within the timeout, and closes the connection', async () => {
    const s = await serve((req) => req.resume());
    expect(await send(s.url, { timeoutMs: 200 })).toEqual({
      statusCode: null,
      error: 'no answer within WEBHOOK_TIMEOUT_MS (200 ms)',
    });
    await s.closed;
  });

  it('closes a connection whose answer body is still unfinished when the timeout has passed', async () => {
    const s = await serve((req, res) => {
      req.resume();
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('a first part, and never the rest');
    });
    agents = keepAliveAgents(4);
    expect(await send(s.url, { timeoutMs: 200 })).toEqual({ statusCode: 200 });
    // Without that, the connection would hold one of the pool's sockets for as long as the
    // receiver cares to keep it.
    await s.closed;
  });

  it('does not follow a redirect: its status is the answer, and the target is never asked', async () => {
    let targetAsked = false;
    const target = await serve((req, res) => {
      targetAsked = true;
      req.resume();
      res.writeHead(204).end();
    });
    const s = await serve((req, res) => {
      req.resume();
      res.writeHead(307, { location: target.url }).end();
    });
    expect(await send(s.url)).toEqual({ statusCode: 307 });
    expect(targetAsked).toBe(false);
  });

  it('ends an attempt in flight when the process stops', async () => {
    const s = await serve((req) => req.resume());
    const stop = new AbortController();
    const pending = send(s.url, { signal: stop.signal });
    await new Promise<void>((resolve) => s.server.once('request', () => resolve()));
    stop.abort();
    expect(await pending).toEqual({ statusCode: null, error: 'aborted: the process is stopping' });
    await s.closed;
  });

  it('refuses a loopback address without connecting when private addresses are not allowed', async () => {
    const s = await serve((req, res) => {
      req.resume();
      res.writeHead(204).end();
    });
    const result = await attempt({
      url: s.url,
      headers: {},
      body: '{}',
      timeoutMs: 5_000,
      allowPrivate: false,
      signal: new AbortController().signal,
    });
    expect(result).toMatchObject({ statusCode: null, error: expect.stringMatching(/loopback/) });
    expect(s.sockets).toHaveLength(0);
  });
});
