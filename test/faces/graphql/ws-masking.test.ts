import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { generateKeyPair, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../../helpers/app.js';

/**
 * One masking rule for every way GraphQL answers (src/faces/graphql/errors.ts): an unexpected
 * error's message reaches a client only with NODE_ENV=development, as yoga masks it over
 * HTTP. Here the failure is the identity provider's key set being unreachable while a socket
 * authenticates: the verifier throws something that is no refusal, and graphql-ws closes the
 * socket with 4500 and a reason.
 */

/** A loopback port nothing listens on: fetching the key set there fails at once. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** A token whose verification needs the key set (RS256, with a `kid`). */
async function providerToken(): Promise<string> {
  const { privateKey } = await generateKeyPair('RS256');
  return new SignJWT({ scope: 'tasks:read' })
    .setProtectedHeader({ alg: 'RS256', kid: 'k1' })
    .setSubject('alice')
    .setExpirationTime('1h')
    .sign(privateKey);
}

/** How the socket of a client with `token` ends. */
function closing(t: TestApp, token: string): Promise<{ code: number; reason: string }> {
  return new Promise((resolve) => {
    t.ws(token).subscribe(
      { query: '{ taskKinds { name } }' },
      {
        next: () => resolve({ code: 0, reason: 'answered' }),
        error: (event) => resolve(event as { code: number; reason: string }),
        complete: () => resolve({ code: 0, reason: 'completed' }),
      },
    );
  });
}

const apps: TestApp[] = [];
let token: string;
async function appIn(nodeEnv: string): Promise<TestApp> {
  const t = await startTestApp({
    env: { NODE_ENV: nodeEnv, AUTH_JWKS_URL: `http://127.0.0.1:${await closedPort()}/jwks` },
  });
  apps.push(t);
  return t;
}
beforeAll(async () => {
  token = await providerToken();
});
afterAll(() => Promise.all(apps.map((t) => t.stop())));

describe('an unexpected error over WebSocket', () => {
  it('is masked in the close reason outside development (NODE_ENV=staging)', async () => {
    const t = await appIn('staging');
    const closed = await closing(t, token);
    expect(closed.code).toBe(4500);
    expect(closed.reason).toBe('Internal server error');
    // The same server over HTTP masks the same failure too.
    const answer = await t.gql('{ taskKinds { name } }', {}, token);
    expect(JSON.stringify(answer)).not.toContain('fetch failed');
  });

  it('says what failed with NODE_ENV=development, as yoga does', async () => {
    const t = await appIn('development');
    const { code, reason } = await closing(t, token);
    expect({ code, reason }).toEqual({ code: 4500, reason: 'fetch failed' });
  });
});
