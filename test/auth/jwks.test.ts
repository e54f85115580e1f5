import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type CryptoKey, exportJWK, exportSPKI, generateKeyPair, type JWK, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mintToken } from '../../src/auth/mint.js';
import { eventually, SECRET, startTestApp, type TestApp } from '../helpers/app.js';

/**
 * Tokens from an identity provider: the test serves the provider's key set (JWKS) on a loopback
 * server of its own and signs tokens as the provider would. The app also has AUTH_JWT_SECRET
 * set (the test helper's default), to show that HS256 is refused once a key set is configured.
 */

const ISSUER = 'https://idp.test/';
const AUDIENCE = 'api://taskhandle';

interface Key {
  kid: string;
  alg: 'RS256' | 'ES256';
  privateKey: CryptoKey;
  publicKey: CryptoKey;
  jwk: JWK;
}

async function newKey(kid: string, alg: 'RS256' | 'ES256'): Promise<Key> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  const jwk = { ...(await exportJWK(publicKey)), kid, alg, use: 'sig' };
  return { kid, alg, privateKey, publicKey, jwk };
}

/** What the key set currently publishes, and how often it was fetched. */
const published: { keys: Key[]; fetches: number } = { keys: [], fetches: 0 };
let jwksServer: Server;
let t: TestApp;
let rsa: Key;
let ec: Key;

interface Claims {
  sub?: string;
  scope?: unknown;
  scp?: unknown;
  iss?: string;
  aud?: string | string[];
}

/** A token as the identity provider signs it: issuer, audience, an hour of life, `kid` in the header. */
function idpToken(
  key: Key,
  claims: Claims = {},
  header: Record<string, unknown> = {},
): Promise<string> {
  const { sub = 'alice', iss = ISSUER, aud = AUDIENCE, ...rest } = claims;
  return new SignJWT({
    ...(claims.scope === undefined && claims.scp === undefined
      ? { scope: 'tasks:read tasks:write' }
      : {}),
    ...rest,
  })
    .setProtectedHeader({ alg: key.alg, kid: key.kid, typ: 'JWT', ...header })
    .setSubject(sub)
    .setIssuer(iss)
    .setAudience(aud)
    .setIssuedAt()
    .setExpirationTime('1h')
    .sign(key.privateKey);
}

const KINDS = '{ taskKinds { name } }';
const START = 'mutation { startTask(input: { kind: "sleep", input: { ms: 60000 } }) { id } }';
const MINE = '{ tasks(first: 1) { edges { cursor } } }';

async function codeOf(query: string, token: string): Promise<string | undefined> {
  const answer = await t.gql(query, {}, token);
  return answer.errors?.[0]?.extensions?.code ?? (answer.errors ? 'UNCODED' : undefined);
}

beforeAll(async () => {
  rsa = await newKey('rsa-1', 'RS256');
  ec = await newKey('ec-1', 'ES256');
  published.keys = [rsa, ec];
  jwksServer = createServer((_req, res) => {
    published.fetches++;
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ keys: published.keys.map((key) => key.jwk) }));
  });
  await new Promise<void>((resolve) => jwksServer.listen(0, '127.0.0.1', resolve));
  const { port } = jwksServer.address() as AddressInfo;
  t = await startTestApp({
    env: {
      AUTH_JWKS_URL: `http://127.0.0.1:${port}/.well-known/jwks.json`,
      AUTH_ISSUER: ISSUER,
      AUTH_AUDIENCE: AUDIENCE,
      AUTH_DEFAULT_SCOPES: 'tasks:read',
    },
  });
});
afterAll(async () => {
  await t?.stop();
  await new Promise((resolve) => jwksServer?.close(resolve));
});

describe('tokens from an identity provider (AUTH_JWKS_URL)', () => {
  it('accepts RS256 and ES256 tokens signed by keys of the set', async () => {
    for (const key of [rsa, ec]) {
      const token = await idpToken(key);
      const started = await t.gql(START, {}, token);
      expect(started.errors).toBeUndefined();
      expect(started.data.startTask.id).toMatch(/^[0-9a-f-]{36}$/);
    }
    expect(published.fetches).toBeGreaterThanOrEqual(1);
  });

  it('accepts an IdP token over WebSocket too', async () => {
    const token = await idpToken(ec);
    const answer = await new Promise<any>((resolve) => {
      t.ws(token).subscribe(
        { query: KINDS },
        { next: resolve, error: resolve, complete: () => undefined },
      );
    });
    expect(answer.data.taskKinds.length).toBeGreaterThan(0);
  });

  it('refuses HS256, even signed with the configured AUTH_JWT_SECRET', async () => {
    const hs = await mintToken(SECRET, {
      sub: 'alice',
      scopes: ['tasks:read', 'tasks:write'],
      issuer: ISSUER,
      audience: AUDIENCE,
    });
    expect(await codeOf(KINDS, hs)).toBe('UNAUTHENTICATED');
  });

  it('refuses HS256 keyed with the public key (algorithm confusion)', async () => {
    const pem = await exportSPKI(rsa.publicKey);
    const forged = await new SignJWT({ scope: 'tasks:read tasks:write tasks:admin' })
      .setProtectedHeader({ alg: 'HS256', kid: rsa.kid })
      .setSubject('alice')
      .setIssuer(ISSUER)
      .setAudience(AUDIENCE)
      .setExpirationTime('1h')
      .sign(new TextEncoder().encode(pem));
    expect(await codeOf(KINDS, forged)).toBe('UNAUTHENTICATED');
  });

  it('refuses alg none', async () => {
    const part = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
    const now = Math.floor(Date.now() / 1000);
    const none = `${part({ alg: 'none', kid: rsa.kid })}.${part({ sub: 'alice', scope: 'tasks:read', iss: ISSUER, aud: AUDIENCE, exp: now + 600 })}.`;
    expect(await codeOf(KINDS, none)).toBe('UNAUTHENTICATED');
  });

  it('refuses a token whose kid is in the set but whose signature is not from that key', async () => {
    const impostor = await newKey(rsa.kid, 'RS256');
    expect(await codeOf(KINDS, await idpToken(impostor))).toBe('UNAUTHENTICATED');
  });

  it('checks AUTH_ISSUER and AUTH_AUDIENCE', async () => {
    expect(await codeOf(KINDS, await idpToken(rsa, { iss: 'https://other-idp.test/' }))).toBe(
      'UNAUTHENTICATED',
    );
    expect(await codeOf(KINDS, await idpToken(rsa, { aud: 'api://someone-else' }))).toBe(
      'UNAUTHENTICATED',
    );
    // An audience list that names this API is fine.
    expect(
      await codeOf(KINDS, await idpToken(rsa, { aud: ['api://someone-else', AUDIENCE] })),
    ).toBeUndefined();
  });

  it('reads scopes from an scp array, a scope string, and falls back to AUTH_DEFAULT_SCOPES', async () => {
    const scpArray = await idpToken(rsa, { sub: 'scp-user', scp: ['tasks:read', 'tasks:write'] });
    expect(await codeOf(START, scpArray)).toBeUndefined();
    const scpReadOnly = await idpToken(rsa, { sub: 'scp-user', scp: ['tasks:read'] });
    expect(await codeOf(MINE, scpReadOnly)).toBeUndefined();
    expect(await codeOf(START, scpReadOnly)).toBe('FORBIDDEN');

    const scopeString = await idpToken(rsa, { sub: 'scope-user', scope: 'tasks:write' });
    expect(await codeOf(START, scopeString)).toBeUndefined();
    expect(await codeOf(MINE, scopeString)).toBe('FORBIDDEN');

    // Neither claim: AUTH_DEFAULT_SCOPES, here "tasks:read" only.
    const bare = await new SignJWT({})
      .setProtectedHeader({ alg: 'RS256', kid: rsa.kid })
      .setSubject('bare-user')
      .setIssuer(ISSUER)
      .setAudience(AUDIENCE)
      .setExpirationTime('1h')
      .sign(rsa.privateKey);
    expect(await codeOf(MINE, bare)).toBeUndefined();
    expect(await codeOf(START, bare)).toBe('FORBIDDEN');

    // A scope claim of an unexpected shape grants nothing, not the defaults.
    expect(
      await codeOf(MINE, await idpToken(rsa, { sub: 'odd-user', scope: { read: true } })),
    ).toBe('FORBIDDEN');
  });

  it('picks up a key rotated into the set, and drops the one rotated out', async () => {
    const known = await idpToken(rsa, { sub: 'before-rotation' });
    expect(await codeOf(KINDS, known)).toBeUndefined();

    const next = await newKey('rsa-2', 'RS256');
    published.keys = [next, ec];
    const fetchesBefore = published.fetches;
    const rotated = await idpToken(next, { sub: 'after-rotation' });
    // The first token with the new kid refetches the set (at most once per cooldown of a few seconds).
    await eventually(
      async () => ((await codeOf(KINDS, rotated)) === undefined ? true : undefined),
      20_000,
      250,
    );
    expect(published.fetches).toBeGreaterThan(fetchesBefore);

    // A token from the retired key that was never seen before is refused now.
    expect(await codeOf(KINDS, await idpToken(rsa, { sub: 'retired-key' }))).toBe(
      'UNAUTHENTICATED',
    );
  });
});
