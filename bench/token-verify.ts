/**
 * What authentication costs per request: `TokenVerifier.verify` without its cache
 * (`cacheSize: 0`: signature and claims checked by jose every time) against the same token
 * again with it (the verified-token cache), for HS256 (AUTH_JWT_SECRET) and for RS256 and ES256 tokens from a key
 * set (AUTH_JWKS_URL, served here on loopback and fetched once). Rounds alternate between the
 * two so machine noise hits both alike; reports the median µs per call and the ratio.
 *
 *   npx tsx bench/token-verify.ts
 *
 * Environment: BENCH_ROUNDS (7), BENCH_ROUND_MS (300): time spent in each measurement round.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { mintToken } from '../src/auth/mint.js';
import { TokenVerifier, type VerifierOptions } from '../src/auth/tokens.js';

const envInt = (name: string, fallback: number) =>
  process.env[name] ? Number(process.env[name]) : fallback;
const ROUNDS = envInt('BENCH_ROUNDS', 7);
const ROUND_MS = envInt('BENCH_ROUND_MS', 300);
const SECRET = 'bench-secret-0123456789abcdef0123456789';
const SCOPES = ['tasks:read', 'tasks:write'];

/** Mean µs per call of `fn` over about `ROUND_MS`, in batches so the clock is read rarely. */
async function round(fn: () => Promise<unknown>): Promise<number> {
  let calls = 0;
  let batch = 1;
  const start = process.hrtime.bigint();
  const budget = BigInt(ROUND_MS) * 1_000_000n;
  for (;;) {
    for (let i = 0; i < batch; i++) await fn();
    calls += batch;
    const elapsed = process.hrtime.bigint() - start;
    if (elapsed >= budget) return Number(elapsed) / 1000 / calls;
    batch = Math.min(batch * 2, 4096);
  }
}

const median = (values: number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

async function measure(name: string, options: VerifierOptions, token: string) {
  const verifier = new TokenVerifier(options);
  const uncachedVerifier = new TokenVerifier({ ...options, cacheSize: 0 });
  // Warm up both paths (JIT, the key set fetch, the cache entry).
  await verifier.verify(token);
  await round(() => uncachedVerifier.verify(token));
  const uncached: number[] = [];
  const cached: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    uncached.push(await round(() => uncachedVerifier.verify(token)));
    cached.push(await round(() => verifier.verify(token)));
  }
  const u = median(uncached);
  const c = median(cached);
  return {
    alg: name,
    uncachedUs: +u.toFixed(2),
    cachedUs: +c.toFixed(3),
    ratio: Math.round(u / c),
  };
}

const rsa = await generateKeyPair('RS256');
const ec = await generateKeyPair('ES256');
const jwks = {
  keys: [
    { ...(await exportJWK(rsa.publicKey)), kid: 'rsa', alg: 'RS256', use: 'sig' },
    { ...(await exportJWK(ec.publicKey)), kid: 'ec', alg: 'ES256', use: 'sig' },
  ],
};
const server = createServer((_req, res) => {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify(jwks));
});
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
const jwksUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/jwks`;

const idpToken = (alg: 'RS256' | 'ES256', kid: string, key: CryptoKey) =>
  new SignJWT({ scope: SCOPES.join(' ') })
    .setProtectedHeader({ alg, kid })
    .setSubject('alice')
    .setIssuedAt()
    .setExpirationTime('1h')
    .sign(key);

const hs: VerifierOptions = { secret: SECRET, defaultScopes: SCOPES };
const idp: VerifierOptions = { jwksUrl, defaultScopes: SCOPES };
const results = [
  await measure('HS256', hs, await mintToken(SECRET, { sub: 'alice', scopes: SCOPES })),
  await measure('RS256', idp, await idpToken('RS256', 'rsa', rsa.privateKey)),
  await measure('ES256', idp, await idpToken('ES256', 'ec', ec.privateKey)),
];
server.close();

console.log(
  `TokenVerifier.verify, median of ${ROUNDS} rounds of ${ROUND_MS} ms (node ${process.version})`,
);
console.log('alg     uncached µs/call   cached µs/call   uncached/cached');
for (const r of results) {
  console.log(
    `${r.alg.padEnd(8)}${String(r.uncachedUs).padStart(16)}${String(r.cachedUs).padStart(17)}${`${r.ratio}×`.padStart(18)}`,
  );
}
console.log(JSON.stringify({ bench: 'token-verify', results }));
