import { describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { alice, t, useFileApp } from '../helpers/file-app.js';
import { RawConnection } from '../helpers/raw-http.js';
import { restClient } from '../helpers/rest.js';

/** HTTP limits of DESIGN §12: one body limit on every route, timeouts, media types, CORS. */

const LIMIT = 64 * 1024;
useFileApp({
  env: {
    HTTP_MAX_BODY_BYTES: String(LIMIT),
    HTTP_HEADERS_TIMEOUT_MS: '300',
    HTTP_REQUEST_TIMEOUT_MS: '600',
  },
});

function post(path: string, headers: Record<string, string>, body: string): string {
  const lines = [`POST ${path} HTTP/1.1`, 'Host: localhost', `Authorization: Bearer ${alice}`];
  for (const [name, value] of Object.entries(headers)) lines.push(`${name}: ${value}`);
  return `${lines.join('\r\n')}\r\n\r\n${body}`;
}

function chunked(text: string, size = 8192): string {
  let out = '';
  for (let i = 0; i < text.length; i += size) {
    const part = text.slice(i, i + size);
    out += `${Buffer.byteLength(part).toString(16)}\r\n${part}\r\n`;
  }
  return `${out}0\r\n\r\n`;
}

const big = (bytes: number) => `{"kind":"sleep","input":{"pad":"${'x'.repeat(bytes)}"}}`;

describe('the body limit', () => {
  for (const path of ['/v1/jobs', '/graphql']) {
    it(`answers a declared oversize body on ${path} with 413, Connection: close and a clean close`, async () => {
      const conn = new RawConnection(t.url);
      const body = big(LIMIT * 2);
      await conn.write(
        post(
          path,
          { 'Content-Type': 'application/json', 'Content-Length': String(body.length) },
          body,
        ),
      );
      const res = await conn.response();
      expect(res?.status).toBe(413);
      expect(res?.headers.connection).toBe('close');
      const refusal = JSON.parse(res?.body ?? '{}');
      // GraphQL clients read `errors`; the other routes answer problem+json.
      if (path === '/graphql')
        expect(refusal.errors[0].extensions).toEqual({ code: 'PAYLOAD_TOO_LARGE' });
      else expect(refusal).toMatchObject({ status: 413, code: 'PAYLOAD_TOO_LARGE' });
      expect(await conn.closed).toEqual({ reset: false });
    });

    it(`answers a chunked oversize body on ${path} with 413 and closes cleanly`, async () => {
      const conn = new RawConnection(t.url);
      await conn.write(
        post(
          path,
          { 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked' },
          chunked(big(LIMIT * 2)),
        ),
      );
      const res = await conn.response();
      expect(res?.status).toBe(413);
      expect(res?.headers.connection).toBe('close');
      const refusal = JSON.parse(res?.body ?? '{}');
      expect(refusal.code ?? refusal.errors[0].extensions.code).toBe('PAYLOAD_TOO_LARGE');
      expect(await conn.closed).toEqual({ reset: false });
    });
  }

  it('keeps a keep-alive client working after a 413', async () => {
    const call = restClient(t.url);
    const first = await call('POST', '/v1/jobs', { token: alice, body: big(LIMIT * 2) });
    expect(first.status).toBe(413);
    const second = await call('POST', '/v1/jobs', {
      token: alice,
      body: { kind: 'sleep', input: { ms: 0 } },
    });
    expect(second.status, second.text).toBe(202);
  });

  it('accepts a body just under the limit', async () => {
    const body = `{"query":"{ __typename }","variables":{"pad":"${'x'.repeat(LIMIT - 100)}"}}`;
    const res = await fetch(`${t.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ data: { __typename: 'Query' } });
  });

  it('refuses an 8 MiB GraphQL body without buffering it', async () => {
    const res = await fetch(`${t.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: `{"query":"{ __typename }","variables":{"pad":"${'x'.repeat(8 * 1024 * 1024)}"}}`,
    });
    expect(res.status).toBe(413);
  });

  it('reads and drops the whole of a 12 MiB refused body, so the close is clean, not a reset', async () => {
    // fetch, curl and the SDKs write the whole body before they read the answer: a server
    // that closes with bytes unread resets the connection, and they see EPIPE, not the 413.
    // Its own server: 12 MiB may take longer than this file's short request timeout to send.
    const roomy = await startTestApp({
      env: { HTTP_MAX_BODY_BYTES: String(LIMIT), HTTP_REQUEST_TIMEOUT_MS: '60000' },
    });
    try {
      await sendsTwelveMiB(roomy);
    } finally {
      await roomy.stop();
    }
  });
});

/** The body is refused on its declared length, before any token is looked at. */
async function sendsTwelveMiB(app: TestApp): Promise<void> {
  for (const path of ['/graphql', '/v1/jobs']) {
    const conn = new RawConnection(app.url);
    const body = big(12 * 1024 * 1024);
    const head = post(
      path,
      { 'Content-Type': 'application/json', 'Content-Length': String(body.length) },
      '',
    );
    const sent = conn.write(head + body);
    const res = await conn.response();
    expect(res?.status, path).toBe(413);
    expect(await sent).toBe(true);
    expect(await conn.closed).toEqual({ reset: false });
  }
}

describe('timeouts', () => {
  it('closes a socket whose headers never finish', async () => {
    const conn = new RawConnection(t.url);
    await conn.write('GET /healthz HTTP/1.1\r\nHost: localhost\r\n');
    await conn.closed;
    expect(conn.socket.destroyed).toBe(true);
  });

  it('closes a socket whose body never finishes', async () => {
    const conn = new RawConnection(t.url);
    await conn.write(
      post('/v1/jobs', { 'Content-Type': 'application/json', 'Content-Length': '100' }, '{"ki'),
    );
    await conn.closed;
    expect(conn.socket.destroyed).toBe(true);
  });
});

describe('media types', () => {
  const call = () => restClient(t.url);
  for (const type of [
    'text/plain',
    'application/x-www-form-urlencoded',
    'multipart/form-data; boundary=x',
  ]) {
    it(`refuses a ${type.split(';')[0]} body on /v1/jobs with 415, creating nothing`, async () => {
      const bob = await t.token(`bob-${type.length}`);
      const res = await call()('POST', '/v1/jobs', {
        token: bob,
        body: '{"kind":"sleep"}',
        headers: { 'content-type': type },
      });
      expect(res.status, res.text).toBe(415);
      expect(res.body).toMatchObject({ code: 'UNSUPPORTED_MEDIA_TYPE' });
      const list = await call()('GET', '/v1/jobs', { token: bob });
      expect(list.body.tasks).toEqual([]);
    });
  }
});
