import { describe, expect, it } from 'vitest';
import { alice, t, useFileApp } from '../helpers/file-app.js';
import { RawConnection, type RawResponse } from '../helpers/raw-http.js';

/**
 * The 413 of DESIGN §12 comes at once: a declared Content-Length over HTTP_MAX_BODY_BYTES is
 * answered before the body is read, a chunked body as soon as its count passes the limit, on
 * every route, with `Connection: close`; then the server reads on for a bounded while, so a
 * client that writes its whole body before it reads still gets the answer and a clean close.
 */

const MIB = 1_048_576;
/** Far beyond any answer the server owes; the assertions are on the answer, not on time. */
const GENEROUS_MS = 20_000;

useFileApp();

const ROUTES = ['/v1/jobs', '/graphql', '/mcp', '/a2a', '/no-such-route'];

function head(path: string, framing: Record<string, string>): string {
  const lines = [
    `POST ${path} HTTP/1.1`,
    'Host: localhost',
    `Authorization: Bearer ${alice}`,
    'Content-Type: application/json',
    'Accept: application/json, text/event-stream',
    'A2A-Version: 1.0',
  ];
  for (const [name, value] of Object.entries(framing)) lines.push(`${name}: ${value}`);
  return `${lines.join('\r\n')}\r\n\r\n`;
}

/** The next answer, or undefined when none comes within GENEROUS_MS. */
async function answer(conn: RawConnection): Promise<RawResponse | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), GENEROUS_MS);
  });
  try {
    return await Promise.race([conn.response(), late]);
  } finally {
    clearTimeout(timer);
  }
}

function expectTooLarge(path: string, res: RawResponse | undefined): void {
  expect(res?.status, path).toBe(413);
  expect(res?.headers.connection).toBe('close');
  const body = JSON.parse(res?.body ?? '{}');
  if (path === '/graphql') {
    expect(res?.headers['content-type']).toMatch(/^application\/json/);
    expect(body).toEqual({
      errors: [{ message: expect.any(String), extensions: { code: 'PAYLOAD_TOO_LARGE' } }],
    });
  } else {
    expect(res?.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(body).toMatchObject({ status: 413, code: 'PAYLOAD_TOO_LARGE' });
  }
}

const padding = (bytes: number) => Buffer.alloc(bytes, 0x20);

/** A chunked body of `bytes` bytes of JSON-ish padding, in 64 KiB chunks. */
function chunks(bytes: number): Buffer {
  const parts: Buffer[] = [];
  for (let sent = 0; sent < bytes; sent += 64 * 1024) {
    const size = Math.min(64 * 1024, bytes - sent);
    parts.push(Buffer.from(`${size.toString(16)}\r\n`), padding(size), Buffer.from('\r\n'));
  }
  return Buffer.concat([...parts, Buffer.from('0\r\n\r\n')]);
}

// Concurrent: each test ends by waiting out the server's lingering close (2 s of silence).
describe.concurrent('a declared Content-Length over the limit', () => {
  for (const path of ROUTES) {
    it(`on ${path} is answered 413 after 2 MiB of a declared 64 MiB, with no more sent`, async () => {
      const conn = new RawConnection(t.url);
      expect(await conn.write(head(path, { 'Content-Length': String(64 * MIB) }))).toBe(true);
      expect(await conn.write(padding(2 * MIB))).toBe(true);
      const res = await answer(conn);
      expectTooLarge(path, res);
      // The server closes the connection by itself, without the other 62 MiB.
      await conn.closed;
    });
  }

  it('reaches a client that writes its whole 3 MiB body before reading, and closes cleanly', async () => {
    for (const path of ['/v1/jobs', '/graphql']) {
      const conn = new RawConnection(t.url);
      const sent = conn.write(
        Buffer.concat([
          Buffer.from(head(path, { 'Content-Length': String(3 * MIB) })),
          padding(3 * MIB),
        ]),
      );
      expect(await sent).toBe(true);
      expectTooLarge(path, await answer(conn));
      expect(await conn.closed).toEqual({ reset: false });
    }
  });
});

describe.concurrent('a chunked body passing the limit', () => {
  // An unknown route reads no body: it is answered 404 at once.
  for (const path of ROUTES.filter((p) => p !== '/no-such-route')) {
    it(`on ${path} is answered 413 without waiting for its end`, async () => {
      const conn = new RawConnection(t.url);
      await conn.write(head(path, { 'Transfer-Encoding': 'chunked' }));
      // 2 MiB of chunks and no last chunk: the body never ends.
      const all = chunks(2 * MIB);
      expect(await conn.write(all.subarray(0, all.length - 5))).toBe(true);
      expectTooLarge(path, await answer(conn));
      await conn.closed;
    });
  }

  it('reaches a client that writes its whole 3 MiB of chunks before reading', async () => {
    const conn = new RawConnection(t.url);
    const sent = conn.write(
      Buffer.concat([
        Buffer.from(head('/graphql', { 'Transfer-Encoding': 'chunked' })),
        chunks(3 * MIB),
      ]),
    );
    expect(await sent).toBe(true);
    expectTooLarge('/graphql', await answer(conn));
    expect(await conn.closed).toEqual({ reset: false });
  });
});

it('still serves the next connection', async () => {
  const res = await t.gql('{ __typename }');
  expect(res).toEqual({ data: { __typename: 'Query' } });
});
