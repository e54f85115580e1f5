import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ServiceError } from '../../src/errors.js';
import { RateLimiter } from '../../src/tasks/rate-limit.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { restClient } from '../helpers/rest.js';

/** RATE_LIMIT_RPS / RATE_LIMIT_BURST (DESIGN §12): a token bucket per principal, every face. */

describe('the bucket', () => {
  function refusal(limiter: RateLimiter, who: string): ServiceError | undefined {
    try {
      limiter.take(who);
      return undefined;
    } catch (err) {
      return err as ServiceError;
    }
  }

  it('allows a burst, then one a second, and says how long to wait', () => {
    let now = 1_000_000;
    const limiter = new RateLimiter({ rateLimitRps: 1, rateLimitBurst: 3 }, () => now);
    for (let i = 0; i < 3; i++) expect(refusal(limiter, 'alice')).toBeUndefined();
    const refused = refusal(limiter, 'alice');
    expect(refused?.code).toBe('RATE_LIMITED');
    expect(refused?.details?.retryAfterMs).toBe(1_000);
    expect(refusal(limiter, 'bob')).toBeUndefined();
    now += 400;
    expect(refusal(limiter, 'alice')?.details?.retryAfterMs).toBe(600);
    now += 600;
    expect(refusal(limiter, 'alice')).toBeUndefined();
    expect(refusal(limiter, 'alice')?.code).toBe('RATE_LIMITED');
  });

  it('is off at 0', () => {
    const limiter = new RateLimiter({ rateLimitRps: 0, rateLimitBurst: 0 });
    for (let i = 0; i < 1_000; i++) limiter.take('alice');
  });

  it('forgets principals whose buckets refilled, so memory stays bounded', () => {
    let now = 0;
    const limiter = new RateLimiter({ rateLimitRps: 10, rateLimitBurst: 10 }, () => now);
    for (let i = 0; i < 50_000; i++) {
      now += 1;
      limiter.take(`p${i}`);
    }
    const size = (limiter as unknown as { buckets: Map<string, unknown> }).buckets.size;
    expect(size).toBeLessThan(20_000);
  });
});

describe('on every face', () => {
  let t: TestApp;
  beforeAll(async () => {
    // One token every 1 000 s: nothing refills while a test runs, however slow the machine.
    t = await startTestApp({ env: { RATE_LIMIT_RPS: '0.001', RATE_LIMIT_BURST: '2' } });
  });
  afterAll(() => t?.stop());

  it('refuses GraphQL operations past the burst with RATE_LIMITED and retryAfterMs', async () => {
    const alice = await t.token('alice-gql');
    const bob = await t.token('bob-gql');
    const query = '{ tasks { edges { cursor } } }';
    expect((await t.gql(query, {}, alice)).errors).toBeUndefined();
    expect((await t.gql(query, {}, alice)).errors).toBeUndefined();
    const refused = await t.gql(query, {}, alice);
    expect(refused.errors?.[0]?.extensions?.code).toBe('RATE_LIMITED');
    expect(refused.errors?.[0]?.extensions?.retryAfterMs).toBeGreaterThan(0);
    // Another principal is unaffected.
    expect((await t.gql(query, {}, bob)).errors).toBeUndefined();
  });

  it('answers REST past the burst with 429 and Retry-After', async () => {
    const call = restClient(t.url);
    const carol = await t.token('carol-rest');
    expect((await call('GET', '/v1/jobs', { token: carol })).status).toBe(200);
    expect((await call('GET', '/v1/jobs', { token: carol })).status).toBe(200);
    const refused = await call('POST', '/v1/jobs', {
      token: carol,
      body: { kind: 'sleep', input: { ms: 0 } },
    });
    expect(refused.status).toBe(429);
    expect(refused.body).toMatchObject({ code: 'RATE_LIMITED' });
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    const list = await t.gql('{ tasks { edges { cursor } } }', {}, await t.token('carol-rest'));
    expect(list.errors?.[0]?.extensions?.code).toBe('RATE_LIMITED');
  });

  it('counts subscriptions over WebSocket as operations too', async () => {
    const dave = await t.token('dave-ws');
    const client = t.ws(dave);
    const id = '00000000-0000-4000-8000-000000000000';
    const codes: string[] = [];
    for (let i = 0; i < 3; i++) {
      codes.push(
        await new Promise<string>((resolve) => {
          client.subscribe(
            { query: `subscription { taskUpdated(id: "${id}") { id } }` },
            {
              next: (value) => resolve(String(value.errors?.[0]?.extensions?.code)),
              error: (error) => resolve(String((error as any)?.[0]?.extensions?.code)),
              complete: () => resolve('complete'),
            },
          );
        }),
      );
    }
    expect(codes).toEqual(['NOT_FOUND', 'NOT_FOUND', 'RATE_LIMITED']);
  });
});
