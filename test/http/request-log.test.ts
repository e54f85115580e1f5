import { once } from 'node:events';
import { connect } from 'node:net';
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, startTestApp, type TestApp } from '../helpers/app.js';

/** Request logs: one line per request, with the principal and never the token. */
describe('request logs', () => {
  let t: TestApp;
  const lines: Array<Record<string, any>> = [];
  let raw = '';
  beforeAll(async () => {
    const sink = new Writable({
      write(chunk, _encoding, done) {
        raw += chunk.toString();
        for (const line of chunk.toString().split('\n')) if (line) lines.push(JSON.parse(line));
        done();
      },
    });
    t = await startTestApp({ log: pino({ level: 'info' }, sink) });
  });
  afterAll(() => t?.stop());

  it('logs method, route, status, duration and principal once per request at info', async () => {
    const token = await t.token('alice');
    const started = await t.gql(
      'mutation { startTask(input: { kind: "sleep", input: { ms: 0 } }) { id } }',
      {},
      token,
    );
    const id = started.data.startTask.id;
    const rest = await fetch(`${t.url}/v1/jobs/${id}?secret=${token}`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(rest.status).toBe(200);
    const refused = await fetch(`${t.url}/v1/jobs`, { headers: { authorization: 'Bearer nope' } });
    expect(refused.status).toBe(401);
    await fetch(`${t.url}/healthz`);

    const requests = await eventually(async () => {
      const found = lines.filter((l) => l.msg === 'request');
      return found.length >= 3 ? found : undefined;
    });
    expect(requests).toHaveLength(3); // /healthz logs at debug
    expect(requests.map((l) => [l.req.method, l.route, l.res.statusCode, l.principal])).toEqual([
      ['POST', '/graphql', 200, 'alice'],
      ['GET', '/v1/jobs/{id}', 200, 'alice'],
      ['GET', '/v1/jobs', 401, null],
    ]);
    for (const line of requests) {
      expect(line.level).toBe(30);
      expect(typeof line.responseTime).toBe('number');
    }
    expect(raw).not.toContain(token);
    expect(raw).not.toContain('nope');
    expect(raw.toLowerCase()).not.toContain('authorization');
    expect(requests.map((l) => l.reqId)).toEqual([
      expect.stringMatching(/^[0-9a-f-]{36}$/),
      rest.headers.get('x-request-id'),
      refused.headers.get('x-request-id'),
    ]);
  });

  it('logs a request whose client went away before the answer at error', async () => {
    const socket = connect(Number(new URL(t.url).port), '127.0.0.1');
    await once(socket, 'connect');
    socket.write('POST /graphql HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n');
    // Node answers `100 Continue` as it hands the request to the app: once it arrives, the
    // request is in flight, and closing the connection aborts it.
    socket.write('Content-Length: 100\r\nExpect: 100-continue\r\n\r\n');
    const [interim] = await once(socket, 'data');
    expect(interim.toString()).toMatch(/^HTTP\/1\.1 100 Continue\r\n/);
    socket.write('{"kind":');
    socket.destroy();
    const aborted = await eventually(async () => lines.find((l) => l.msg === 'request aborted'));
    expect(aborted).toMatchObject({ level: 50, req: { method: 'POST', path: '/graphql' } });
  });
});
