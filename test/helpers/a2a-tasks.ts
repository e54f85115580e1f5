import type { Client } from '@a2a-js/sdk/client';
import { afterAll, beforeAll } from 'vitest';
import { a2aClient } from './a2a.js';
import { startTestApp, type TestApp } from './app.js';
import { holdWith } from './kinds.js';
import { type RestResponse, rest } from './rest.js';

/**
 * What the suites of the A2A face's methods (test/faces/a2a/tasks*.test.ts) share: two kinds
 * and an app running them, with SDK clients for alice and bob. `useA2ATasksApp()` starts it
 * before a file's tests and stops it after; the bindings below then hold them (ES modules
 * export them live).
 */

/** Waits until cancelled; its input's `n`, if given, must be an integer. */
export const hold = holdWith({
  inputSchema: { type: 'object', properties: { n: { type: 'integer' } } },
});

/** Reports progress with a message, then waits until cancelled. */
export const halfway = holdWith({
  name: 'halfway',
  inputSchema: hold.inputSchema,
  run: (ctx) => {
    ctx.progress(0.5, 'halfway there');
    return hold.run(ctx);
  },
});

export let t: TestApp;
export let alice: Client;
export let bob: Client;
export let aliceToken: string;

export function useA2ATasksApp(): void {
  beforeAll(async () => {
    t = await startTestApp({
      kinds: [hold, halfway],
      // Tasks of `hold` run until cancelled: room for them all beside the quick ones.
      env: { RUNNER_CONCURRENCY: '200' },
    });
    aliceToken = await t.token('alice');
    alice = await a2aClient(t.url, aliceToken);
    bob = await a2aClient(t.url, await t.token('bob'));
  });
  afterAll(() => t?.stop());
}

/** The task on the REST face, read as `token` (alice by default). */
export const restGet = (id: string, token = aliceToken): Promise<RestResponse> =>
  rest(t.url, 'GET', `/v1/jobs/${id}`, { token });

/** A client for a principal of its own, so counts start at zero. */
export async function fresh(sub: string): Promise<Client> {
  return a2aClient(t.url, await t.token(sub));
}
