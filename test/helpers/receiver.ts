import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

/** One request a receiver got. */
export interface Received {
  path: string;
  headers: Record<string, string>;
  body: string;
  json: any;
}

/** How the receiver answers request number `n` (0-based); `undefined` never answers. */
export type Answer = (
  received: Received,
  n: number,
  res: ServerResponse,
) => number | undefined | 'handled';

export interface Receiver {
  url: string;
  port: number;
  received: Received[];
  /** TCP connections accepted so far (a refused address must never open one). */
  connections: number;
  answer: Answer;
  /** Resolves once `count` requests have arrived. */
  waitFor(count: number): Promise<Received[]>;
  close(): Promise<void>;
}

/**
 * A request's whole body, or `undefined` when the sender aborted it before the end — as a
 * sender stopped past its grace does. Reading an aborted request throws; a receiver's handler
 * must not turn that into an unhandled rejection of the test run.
 */
export async function requestBody(req: IncomingMessage): Promise<string | undefined> {
  const chunks: Buffer[] = [];
  try {
    for await (const chunk of req) chunks.push(chunk as Buffer);
  } catch {
    return undefined;
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** A real webhook receiver on a loopback port of its own. */
export async function startReceiver(answer: Answer = () => 200): Promise<Receiver> {
  const waiters: Array<{ count: number; resolve: (r: Received[]) => void }> = [];
  const receiver: Receiver = {
    url: '',
    port: 0,
    received: [],
    connections: 0,
    answer,
    waitFor(count) {
      if (receiver.received.length >= count) return Promise.resolve(receiver.received);
      return new Promise((resolve) => waiters.push({ count, resolve }));
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
  const server = createServer(async (req: IncomingMessage, res: ServerResponse) => {
    const body = await requestBody(req);
    if (body === undefined) return; // the sender gave up mid-body: nothing arrived
    let json: unknown;
    try {
      json = JSON.parse(body);
    } catch {
      json = undefined;
    }
    const received: Received = {
      path: req.url ?? '/',
      headers: req.headers as Record<string, string>,
      body,
      json,
    };
    const n = receiver.received.length;
    receiver.received.push(received);
    for (const w of waiters.filter((w) => receiver.received.length >= w.count)) {
      waiters.splice(waiters.indexOf(w), 1);
      w.resolve(receiver.received);
    }
    const status = receiver.answer(received, n, res);
    if (status === undefined || status === 'handled') return; // hangs, or answered itself
    res.writeHead(status, { 'content-type': 'text/plain' }).end('ok');
  });
  server.on('connection', () => receiver.connections++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  receiver.port = (server.address() as AddressInfo).port;
  receiver.url = `http://127.0.0.1:${receiver.port}/hook`;
  return receiver;
}

/** Verifies a delivery's signature as a receiver would; throws when it does not match. */
export function verify(secret: string, received: Received): unknown {
  return new Webhook(secret).verify(received.body, {
    'webhook-id': received.headers['webhook-id']!,
    'webhook-timestamp': received.headers['webhook-timestamp']!,
    'webhook-signature': received.headers['webhook-signature']!,
  });
}
