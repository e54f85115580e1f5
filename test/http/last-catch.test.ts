import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ServiceError } from '../../src/errors.js';
import { PayloadTooLarge } from '../../src/http/body.js';
import { answerThrown } from '../../src/http/last-catch.js';
import { sendJson } from '../../src/http/problem.js';
import { createHttpServer } from '../../src/http/server.js';
import { capturingLog } from '../helpers/app.js';

/**
 * The last catch (src/http/last-catch.ts), the one way the server and every plain-HTTP face
 * answer what was thrown while serving a request: a refusal, the 413, a masked 500 logged with
 * its cause, or — once the headers are out — a cut response, never one that looks whole.
 */

const { log, lines } = capturingLog();

/** A value whose every read throws: the catch must still answer and log. */
const hostile = new Proxy(
  {},
  {
    get() {
      throw new Error('hostile read');
    },
    getPrototypeOf() {
      throw new Error('hostile prototype');
    },
  },
);

const THROWN: Record<string, () => unknown> = {
  refusal: () => new ServiceError('NOT_FOUND', 'Task not found.'),
  unexpected: () => new Error('password=hunter2'),
  bigint: () => 10n,
  hostile: () => hostile,
  'too-large': () => new PayloadTooLarge(10),
};

let server: Server;
let url: string;
beforeAll(async () => {
  server = createHttpServer({
    ready: async () => true,
    log,
    limits: {
      httpMaxBodyBytes: 1024,
      httpHeadersTimeoutMs: 10_000,
      httpRequestTimeoutMs: 30_000,
      corsOrigins: [],
      allowedHosts: '*',
    },
    handlers: [
      // A face with its own last catch, answering in its own protocol.
      async (req, res) => {
        if (!req.url?.startsWith('/face/')) return false;
        try {
          throw THROWN[req.url.slice(6)]?.();
        } catch (err) {
          answerThrown(req, res, err, {
            log,
            where: 'the test face',
            refuse: (response, thrown) => {
              if (!(thrown instanceof ServiceError)) return false;
              sendJson(response, 200, { error: { code: -32602, message: thrown.message } });
              return true;
            },
            mask: (response) => sendJson(response, 500, { error: { code: -32603 } }),
          });
        }
        return true;
      },
      // What propagates to the server's own catch.
      async (req, res) => {
        const [, where, name, after] = req.url?.split('/') ?? [];
        if (where !== 'server') return false;
        if (after === 'after-headers') {
          res.writeHead(200, { 'content-type': 'text/event-stream' });
          // Written out before the failure, so the client has the headers when it comes.
          await new Promise((resolve) => res.write('data: first\n\n', resolve));
        }
        throw THROWN[name as string]?.();
      },
    ],
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(
  () =>
    new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    }),
);

async function get(path: string) {
  const res = await fetch(`${url}${path}`);
  return { status: res.status, headers: res.headers, text: await res.text() };
}

const logged = (msg: string) => lines.filter((line) => line.msg === msg);

describe('the last catch', () => {
  it('answers a ServiceError with its refusal, and logs nothing', async () => {
    const before = lines.length;
    const answer = await get('/server/refusal');
    expect(answer.status).toBe(404);
    expect(JSON.parse(answer.text)).toMatchObject({ code: 'NOT_FOUND', detail: 'Task not found.' });
    expect(lines.slice(before).filter((line) => line.level >= 50)).toEqual([]);
  });

  it.each(['unexpected', 'bigint', 'hostile'])(
    'masks anything else (%s) as a 500, and logs its cause',
    async (name) => {
      const before = lines.length;
      const answer = await get(`/server/${name}`);
      expect(answer.status).toBe(500);
      expect(JSON.parse(answer.text)).toEqual({
        type: 'about:blank',
        title: 'Internal Server Error',
        status: 500,
        code: 'INTERNAL_SERVER_ERROR',
        detail: 'Unexpected error.',
      });
      expect(answer.text).not.toContain('hunter2');
      const line = lines.slice(before).find((l) => l.msg === 'unexpected error in the server');
      expect(line).toMatchObject({ level: 50, method: 'GET', path: `/server/${name}` });
      expect(line?.err?.message).toBeTruthy();
      if (name === 'unexpected') expect(line?.err?.message).toBe('password=hunter2');
    },
  );

  it('answers PayloadTooLarge with the 413 of every route, closing the connection', async () => {
    const answer = await get('/server/too-large');
    expect(answer.status).toBe(413);
    expect(answer.headers.get('connection')).toBe('close');
    expect(JSON.parse(answer.text)).toMatchObject({ code: 'PAYLOAD_TOO_LARGE' });
  });

  it.each(['refusal', 'unexpected'])(
    'cuts a response whose headers are out (%s), and logs why',
    async (name) => {
      const before = logged('the server: the response failed after its headers were sent').length;
      const res = await fetch(`${url}/server/${name}/after-headers`);
      expect(res.status).toBe(200);
      // The stream ends in error, not cleanly: the client must not take it for a whole answer.
      await expect(res.text()).rejects.toThrow();
      const after = logged('the server: the response failed after its headers were sent');
      expect(after).toHaveLength(before + 1);
      expect(after.at(-1)).toMatchObject({ path: `/server/${name}/after-headers` });
      expect(after.at(-1)?.err?.message).toBeTruthy();
    },
  );

  it('lets a face answer in its own protocol, and masks the unexpected its way', async () => {
    expect(await get('/face/refusal')).toMatchObject({
      status: 200,
      text: '{"error":{"code":-32602,"message":"Task not found."}}',
    });
    const before = logged('unexpected error in the test face').length;
    expect(await get('/face/unexpected')).toMatchObject({
      status: 500,
      text: '{"error":{"code":-32603}}',
    });
    expect(logged('unexpected error in the test face')).toHaveLength(before + 1);
    // The 413 is every route's, whatever the face.
    expect((await get('/face/too-large')).status).toBe(413);
  });
});
