import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { restDocument } from '../../../src/faces/rest/table.js';
import { OpenApiChecker, type RestAnswer } from '../../helpers/openapi-check.js';
import { takeMismatches } from '../../helpers/openapi-conformance.js';

/**
 * The checker every REST test runs through (test/openapi-setup.ts) rejects what the document
 * does not say: without this, a checker that passed everything would look the same.
 */

const checker = new OpenApiChecker(restDocument() as never);
const ID = '5b8c1e2a-3f4d-4e6f-8a9b-0c1d2e3f4a5b';
const NOW = '2026-01-01T00:00:00.000Z';
const HANDLE = {
  resultType: 'task',
  taskId: ID,
  status: 'working',
  createdAt: NOW,
  lastUpdatedAt: NOW,
  ttlMs: 60_000,
  pollIntervalMs: 1_000,
  attempt: 0,
  maxAttempts: 3,
  labels: {},
};

function answer(
  method: string,
  url: string,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): RestAnswer {
  const type = status >= 400 ? 'application/problem+json' : 'application/json';
  return {
    method,
    url,
    status,
    headers: new Headers({ 'content-type': type, ...headers }),
    text: body === undefined ? '' : JSON.stringify(body),
  };
}

const problem = (status: number, code: string) => ({
  type: 'about:blank',
  title: 'Refused',
  status,
  code,
  detail: 'Because.',
});

describe('the OpenAPI answer checker', () => {
  it('passes answers the document declares', () => {
    expect(
      checker.check(
        answer('POST', '/v1/jobs', 202, HANDLE, { location: `/v1/jobs/${ID}`, 'retry-after': '1' }),
      ),
    ).toEqual([]);
    expect(checker.check(answer('GET', `/v1/jobs/${ID}`, 404, problem(404, 'NOT_FOUND')))).toEqual(
      [],
    );
    expect(checker.check(answer('DELETE', '/v1/schedules/nightly', 204, undefined))).toEqual([]);
  });

  it('rejects a status the operation does not declare', () => {
    const found = checker.check(answer('GET', `/v1/jobs/${ID}`, 418, problem(418, 'TEAPOT')));
    expect(found.join()).toMatch(/status 418 is not declared/);
  });

  it('rejects a body that does not match, a member the document does not name, a code not listed', () => {
    const { taskId: _, ...noId } = HANDLE;
    expect(checker.check(answer('GET', `/v1/jobs/${ID}`, 200, noId)).join()).toMatch(/taskId/);
    expect(
      checker.check(answer('GET', `/v1/jobs/${ID}`, 200, { ...HANDLE, secret: 'x' })).join(),
    ).toMatch(/unevaluated/);
    expect(
      checker.check(answer('GET', `/v1/jobs/${ID}`, 200, { ...HANDLE, status: 'done' })).join(),
    ).toMatch(/status/);
    expect(
      checker.check(answer('GET', `/v1/jobs/${ID}`, 404, problem(404, 'TASK_TERMINAL'))).join(),
    ).toMatch(/code/);
  });

  it('rejects a missing required header, an undeclared one and a bad content type', () => {
    expect(checker.check(answer('POST', '/v1/jobs', 202, HANDLE)).join()).toMatch(
      /location is required/,
    );
    expect(
      checker.check(answer('DELETE', `/v1/jobs/${ID}`, 200, HANDLE, { 'retry-after': '1' })).join(),
    ).toMatch(/retry-after is sent but not declared/);
    expect(
      checker
        .check(answer('GET', `/v1/jobs/${ID}`, 200, HANDLE, { 'content-type': 'text/plain' }))
        .join(),
    ).toMatch(/content type text\/plain/);
  });

  it('wants 405 with Allow for a method a path does not take, and 404 for no route', () => {
    expect(checker.check(answer('PATCH', '/v1/jobs', 405, problem(405, 'X')))).toMatchObject([
      expect.stringMatching(/no Allow/),
    ]);
    expect(checker.check(answer('GET', '/v1/jobs/a/b/c', 200, HANDLE)).join()).toMatch(
      /no such operation, so 404/,
    );
    expect(checker.check(answer('GET', '/v1/traces', 200, {}))).toEqual([]); // not ours
  });
});

describe('the fetch hook of every test file', () => {
  let url: string;
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"tasks":"none"}');
  });
  beforeAll(async () => {
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise((resolve) => server.close(resolve)));

  it('rejects a nonconforming answer and keeps it for the test’s afterEach', async () => {
    await expect(fetch(`${url}/v1/jobs`)).rejects.toThrow(/does not conform to openapi.json/);
    const kept = takeMismatches(); // taken here, or this test's afterEach would fail it
    expect(kept.join()).toMatch(/GET \/v1\/jobs → 200: body\/tasks must be array/);
    const other = await fetch(`${url}/elsewhere`);
    expect(await other.json()).toEqual({ tasks: 'none' }); // paths not in the document pass
  });
});
