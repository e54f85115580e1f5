import { afterAll, beforeAll, expect } from 'vitest';
import { eventually, startTestApp, type TestApp } from './app.js';
import { holdWith } from './kinds.js';
import { type RestResponse, restClient } from './rest.js';

/**
 * The REST suites' shared app: `useRestApp()` in a test file starts it for that file; the
 * bindings below then hold its app, client and tokens (ES modules export them live).
 */

/** Waits until cancelled; its poll interval is not a whole number of seconds. */
const hold = holdWith({ pollIntervalMs: 2_500 });
const quick = holdWith({ name: 'quick', pollIntervalMs: 200 });

export const HANDLE_KEYS = [
  'attempt',
  'createdAt',
  'labels',
  'lastUpdatedAt',
  'maxAttempts',
  'pollIntervalMs',
  'resultType',
  'status',
  'taskId',
  'ttlMs',
];
export const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,3})?Z$/;
export const UNKNOWN_ID = '5b8c1e2a-3f4d-4e6f-8a9b-0c1d2e3f4a5b';

export let t: TestApp;
export let call: ReturnType<typeof restClient>;
export let alice: string;
export let bob: string;

/** Starts the file's app (kinds `hold` and `quick`) before its tests, stops it after. */
export function useRestApp(): void {
  beforeAll(async () => {
    t = await startTestApp({ kinds: [hold, quick] });
    call = restClient(t.url);
    alice = await t.token('alice');
    bob = await t.token('bob');
  });
  afterAll(() => t?.stop());
}

export function expectProblem(res: RestResponse, status: number, code: string): void {
  expect(res.status, res.text).toBe(status);
  expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  expect(res.body).toMatchObject({ status, code });
  expect(typeof res.body.title).toBe('string');
  expect(res.body.title.length).toBeGreaterThan(0);
  expect(typeof res.body.detail).toBe('string');
}

export async function post(token: string, body: unknown, headers: Record<string, string> = {}) {
  return call('POST', '/v1/jobs', { token, body, headers });
}

/** Polls GET /v1/jobs/{id} until the status is `status`. */
export async function untilStatus(
  token: string,
  id: string,
  status: string,
): Promise<RestResponse> {
  return eventually(async () => {
    const res = await call('GET', `/v1/jobs/${id}`, { token });
    return res.body?.status === status ? res : undefined;
  });
}
