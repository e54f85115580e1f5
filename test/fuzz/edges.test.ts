import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FuzzServer, RUNS, SEED, startFuzzServer } from '../helpers/fuzz.js';
import type { NodeProcess } from '../helpers/process.js';
import { RawConnection, type RawResponse } from '../helpers/raw-http.js';

/**
 * Property-based fuzzing of the edges of a request on a development server process (the kind
 * DNS rebinding aims at): random and hostile `Host`, `Origin` and `Content-Length` values on
 * every route, over raw sockets (fetch sets the first and last itself). Whatever arrives, the
 * answer is coded and never a 5xx, or the socket is closed; a Host not allowed is always 421;
 * the process lives on. `FUZZ_SEED=<seed>` replays a run.
 */

const LIMIT = 2048;
/** Far beyond any answer owed: the request timeout is 1 s and a lingering close 2 s. */
const GENEROUS_MS = 15_000;

let server: NodeProcess;
let url: string;
let port: string;

const ALLOWED = new Set(['localhost', '127.0.0.1', '[::1]']);
/** What ALLOWED_HOSTS should make of a Host value: allowed, or not. */
function allowed(host: string | undefined): boolean {
  if (host === undefined) return false;
  const value = host.trim().toLowerCase();
  const bracketed = /^(\[[^\]]*\])(?::\d*)?$/.exec(value);
  const name = bracketed ? bracketed[1]! : value.replace(/:\d*$/, '').replace(/\.$/, '');
  return ALLOWED.has(name);
}

/** Printable header text: what a client could put on the wire (CR and LF left out). */
const headerText = fc.string({ maxLength: 60 }).map((s) => s.replace(/[\r\n\0]/g, ''));

const host = fc.oneof(
  fc.constantFrom('localhost', '127.0.0.1', '[::1]', 'LOCALHOST.', 'evil.example.com', ''),
  fc.constantFrom('localhost', '127.0.0.1', '[::1]', 'evil.example.com').map((h) => `${h}:${port}`),
  fc.domain(),
  fc.ipV4(),
  fc.ipV6().map((a) => `[${a}]`),
  fc.tuple(fc.domain(), fc.nat(70_000)).map(([d, p]) => `${d}:${p}`),
  fc.constantFrom('localhost.evil.example.com', '127.0.0.1.nip.io', 'localhost:x', '[::1', '::1'),
  headerText,
);

const origin = fc.oneof(
  fc.constant(undefined),
  fc.constantFrom('null', 'http://evil.example.com', 'http://localhost', 'http://127.0.0.1:1'),
  fc.webUrl().map((u) => new URL(u).origin),
  headerText,
);

/** A Content-Length value, and how many body bytes follow it. */
const contentLength = fc.oneof(
  fc.constant({ header: undefined as string | undefined, body: 0 }),
  fc.nat(LIMIT).map((n) => ({ header: String(n), body: n })),
  fc.integer({ min: LIMIT + 1, max: 2 ** 40 }).map((n) => ({ header: String(n), body: 64 })),
  fc
    .constantFrom(
      '99999999999999999999999',
      '-1',
      '1e3',
      '0x10',
      ' 5',
      '5, 5',
      '5,6',
      '',
      '9007199254740993',
      '+5',
      '5.0',
    )
    .map((header) => ({ header, body: 8 })),
);

const request = fc.record({
  method: fc.constantFrom('GET', 'POST', 'OPTIONS'),
  path: fc.constantFrom(
    '/',
    '/graphql',
    '/v1/jobs',
    '/mcp',
    '/a2a',
    '/a2a/',
    '/metrics',
    '/readyz',
    '/nope',
  ),
  host: fc.oneof(
    { weight: 9, arbitrary: host.map((h) => h as string | undefined) },
    { weight: 1, arbitrary: fc.constant(undefined) },
  ),
  origin,
  length: contentLength,
  upgrade: fc.boolean(),
});

/** The first answer, or undefined once the socket closes without one. */
async function answerOf(conn: RawConnection): Promise<RawResponse | undefined | 'nothing'> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'nothing'>((resolve) => {
    timer = setTimeout(() => resolve('nothing'), GENEROUS_MS);
  });
  try {
    return await Promise.race([conn.response(), late]);
  } finally {
    clearTimeout(timer);
  }
}

function expectAlive() {
  expect(server.child.exitCode).toBeNull();
  expect(server.child.signalCode).toBeNull();
}

const edges = () =>
  fc.asyncProperty(request, async (run) => {
    const lines = [`${run.method} ${run.path} HTTP/1.1`];
    if (run.host !== undefined) lines.push(`Host: ${run.host}`);
    if (run.origin !== undefined) lines.push(`Origin: ${run.origin}`);
    if (run.length.header !== undefined) lines.push(`Content-Length: ${run.length.header}`);
    lines.push('Content-Type: application/json', 'Accept: application/json, text/event-stream');
    if (run.upgrade)
      lines.push(
        'Upgrade: websocket',
        'Connection: Upgrade',
        'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==',
        'Sec-WebSocket-Version: 13',
        'Sec-WebSocket-Protocol: graphql-transport-ws',
      );
    const conn = new RawConnection(url);
    try {
      await conn.write(
        Buffer.concat([
          Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1'),
          Buffer.alloc(run.length.body, 0x20),
        ]),
      );
      const res = await answerOf(conn);
      expect(res, 'neither an answer nor a close').not.toBe('nothing');
      if (res === undefined || res === 'nothing') return; // closed: Node refused the bytes
      expect(res.status, JSON.stringify(res)).toBeLessThan(500);
      // Our refusals are coded JSON; Node's parser (400, 408, 431) and the WebSocket
      // library (an upgrade it cannot take) answer without one.
      if (res.status >= 400 && /json/.test(res.headers['content-type'] ?? '')) {
        const body = JSON.parse(res.body);
        const code = body.code ?? body.errors?.[0]?.extensions?.code ?? body.error?.code;
        expect(code, res.body).toBeDefined();
      }
      if (res.status === 421)
        expect(JSON.parse(res.body)).toMatchObject({ code: 'MISDIRECTED_REQUEST' });
      // A name not allowed is never served, whatever else the request says.
      if (res.status !== 400 && res.status !== 408 && res.status !== 431 && !allowed(run.host))
        expect(res.status, `Host ${JSON.stringify(run.host)}`).toBe(421);
    } finally {
      conn.close();
    }
  });

describe('fuzzing Host, Origin and Content-Length', { timeout: 300_000 }, () => {
  let running: FuzzServer | undefined;
  beforeAll(async () => {
    console.log(`fuzz-edges: FUZZ_SEED=${SEED} FUZZ_RUNS=${RUNS}`);
    running = await startFuzzServer({
      NODE_ENV: 'development',
      AUTH_JWT_SECRET: '',
      HTTP_MAX_BODY_BYTES: String(LIMIT),
      HTTP_HEADERS_TIMEOUT_MS: '1000',
      HTTP_REQUEST_TIMEOUT_MS: '1000',
    });
    ({ server, url } = running);
    port = new URL(url).port;
  }, 180_000);
  afterAll(() => running?.stop());

  it('answers every request coded and under 500, refuses every other name with 421, stays up', async () => {
    await fc.assert(edges(), { seed: SEED, numRuns: RUNS, interruptAfterTimeLimit: 240_000 });
    expectAlive();
    expect(server.stderr()).not.toMatch(/Unhandled|FATAL|heap out of memory/);
  });
});
