import { SignJWT } from 'jose';
import { describe, expect, it } from 'vitest';
import { mintToken } from '../../src/auth/mint.js';
import { TokenVerifier } from '../../src/auth/tokens.js';
import { ServiceError } from '../../src/errors.js';
import { SECRET } from '../helpers/app.js';

/** TokenVerifier on its own (HS256, real jose): claims, clock skew, and the cache's limits. */

const DEFAULTS = ['tasks:read', 'tasks:write'];
const verifier = (options: Partial<ConstructorParameters<typeof TokenVerifier>[0]> = {}) =>
  new TokenVerifier({ secret: SECRET, defaultScopes: DEFAULTS, ...options });

function sign(claims: Record<string, unknown>, exp: number | string = '1h'): Promise<string> {
  return new SignJWT(claims)
    .setProtectedHeader({ alg: 'HS256' })
    .setSubject('alice')
    .setIssuedAt()
    .setExpirationTime(exp)
    .sign(new TextEncoder().encode(SECRET));
}

async function refusal(promise: Promise<unknown>): Promise<string> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ServiceError);
  expect((err as ServiceError).code).toBe('UNAUTHENTICATED');
  return (err as ServiceError).message;
}

/** Resolves once the wall clock has passed `epochMs`. */
async function clockPast(epochMs: number): Promise<void> {
  while (Date.now() <= epochMs)
    await new Promise((r) => setTimeout(r, Math.min(250, epochMs - Date.now() + 5)));
}

describe('scopes of a token', () => {
  it('reads a space-separated scope string', async () => {
    const p = await verifier().verify(await sign({ scope: 'tasks:read  tasks:admin' }));
    expect([...p.scopes].sort()).toEqual(['tasks:admin', 'tasks:read']);
  });

  it('reads an scp array, and an scp string', async () => {
    expect([...(await verifier().verify(await sign({ scp: ['tasks:write', 42] }))).scopes]).toEqual(
      ['tasks:write'],
    );
    expect([
      ...(await verifier().verify(await sign({ scp: 'tasks:read tasks:write' }))).scopes,
    ]).toEqual(['tasks:read', 'tasks:write']);
  });

  it('uses the default scopes only when neither claim is present', async () => {
    expect([
      ...(await verifier({ defaultScopes: ['tasks:read'] }).verify(await sign({}))).scopes,
    ]).toEqual(['tasks:read']);
    // Present but empty, or of another shape: no scopes at all.
    expect((await verifier().verify(await sign({ scope: '' }))).scopes.size).toBe(0);
    expect((await verifier().verify(await sign({ scope: 7 }))).scopes.size).toBe(0);
    expect(
      (await verifier().verify(await sign({ scope: null, scp: ['tasks:admin'] }))).scopes.size,
    ).toBe(0);
  });

  it('refuses a token without a subject', async () => {
    const token = await new SignJWT({ scope: 'tasks:read' })
      .setProtectedHeader({ alg: 'HS256' })
      .setExpirationTime('1h')
      .sign(new TextEncoder().encode(SECRET));
    expect(await refusal(verifier().verify(token))).toMatch(/subject/);
  });
});

describe('what is refused', () => {
  it('refuses alg none, a foreign signature and an expired token', async () => {
    const part = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
    const now = Math.floor(Date.now() / 1000);
    await refusal(
      verifier().verify(`${part({ alg: 'none' })}.${part({ sub: 'alice', exp: now + 60 })}.`),
    );
    await refusal(
      verifier().verify(
        await mintToken('another-secret-of-enough-length-000000', {
          sub: 'alice',
          scopes: DEFAULTS,
        }),
      ),
    );
    expect(await refusal(verifier().verify(await sign({}, now - 60)))).toMatch(/expired/);
  });

  it('tolerates a few seconds of clock skew, not more', async () => {
    const now = Math.floor(Date.now() / 1000);
    // Issued by a clock 3 s ahead of ours; expired 3 s ago by ours.
    const ahead = await new SignJWT({})
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject('alice')
      .setIssuedAt(now + 3)
      .setNotBefore(now + 3)
      .setExpirationTime(now + 3600)
      .sign(new TextEncoder().encode(SECRET));
    await expect(verifier().verify(ahead)).resolves.toMatchObject({ sub: 'alice' });
    await expect(verifier().verify(await sign({}, now - 3))).resolves.toMatchObject({
      sub: 'alice',
    });
    const farAhead = await new SignJWT({})
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject('alice')
      .setNotBefore(now + 120)
      .setExpirationTime(now + 3600)
      .sign(new TextEncoder().encode(SECRET));
    await refusal(verifier().verify(farAhead));
  });

  it('refuses a token with the wrong issuer or audience when both are configured', async () => {
    const v = verifier({ issuer: 'https://issuer.test/', audience: 'taskhandle' });
    const good = await mintToken(SECRET, {
      sub: 'alice',
      scopes: DEFAULTS,
      issuer: 'https://issuer.test/',
      audience: 'taskhandle',
    });
    await expect(v.verify(good)).resolves.toMatchObject({ sub: 'alice' });
    await refusal(
      v.verify(
        await mintToken(SECRET, { sub: 'alice', scopes: DEFAULTS, issuer: 'https://issuer.test/' }),
      ),
    );
    await refusal(
      v.verify(await mintToken(SECRET, { sub: 'alice', scopes: DEFAULTS, audience: 'taskhandle' })),
    );
    await refusal(
      v.verify(
        await mintToken(SECRET, {
          sub: 'alice',
          scopes: DEFAULTS,
          issuer: 'https://evil.test/',
          audience: 'taskhandle',
        }),
      ),
    );
  });
});

describe('the verified-token cache', () => {
  it('answers a repeated token from the cache', async () => {
    const v = verifier();
    const token = await sign({ scope: 'tasks:read' });
    const first = await v.verify(token);
    expect(await v.verify(token)).toBe(first);
    // Without a cache (cacheSize 0) it builds a new principal every time.
    const uncached = verifier({ cacheSize: 0 });
    expect(await uncached.verify(token)).not.toBe(await uncached.verify(token));
  });

  it('never serves a token past its exp (no tolerance configured)', async () => {
    const v = verifier({ clockToleranceSec: 0 });
    const exp = Math.floor(Date.now() / 1000) + 2;
    const token = await sign({ scope: 'tasks:read' }, exp);
    const principal = await v.verify(token);
    expect(principal.expiresAt).toBe(exp * 1000);
    expect(await v.verify(token)).toBe(principal);
    await clockPast(exp * 1000);
    expect(await refusal(v.verify(token))).toMatch(/expired/);
  });

  it('stops serving a token at the instant fresh verification would refuse it (with a clock tolerance)', async () => {
    const v = verifier({ clockToleranceSec: 1 });
    const exp = Math.floor(Date.now() / 1000) + 1;
    const token = await sign({}, exp);
    const principal = await v.verify(token);
    // Accepted until exp plus the tolerance, like jose itself; the socket closes at the same instant.
    expect(principal.expiresAt).toBe((exp + 1) * 1000);
    await clockPast(principal.expiresAt!);
    await refusal(v.verify(token));
    await refusal(verifier({ clockToleranceSec: 1, cacheSize: 0 }).verify(token));
  });

  it('keeps at most cacheSize tokens, dropping the oldest', async () => {
    const v = verifier({ cacheSize: 2 });
    const [a, b, c] = await Promise.all(['a', 'b', 'c'].map((scope) => sign({ scope })));
    const first = await v.verify(a!);
    const second = await v.verify(b!);
    const third = await v.verify(c!);
    expect(await v.verify(c!)).toBe(third);
    expect(await v.verify(b!)).toBe(second);
    expect(await v.verify(a!)).not.toBe(first);
  });
});
