import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import { refusedAddress, resolveChecked } from '../../src/tasks/webhooks/address-guard.js';
import { checkSecret, generateSecret } from '../../src/tasks/webhooks/rules.js';
import { outcomeOf } from '../../src/webhook-delivery/outcome.js';

/** The rules of DESIGN §11 that need no running app: the guard, secrets, outcomes, settings. */

describe('the address guard on literal addresses', () => {
  it('refuses loopback, private, link-local, CGNAT, multicast, unspecified and their IPv4-mapped forms', () => {
    const refused: Array<[string, string]> = [
      ['127.0.0.1', 'loopback'],
      ['127.255.0.9', 'loopback'],
      ['::1', 'loopback'],
      ['10.1.2.3', 'private'],
      ['172.16.0.1', 'private'],
      ['172.31.255.255', 'private'],
      ['192.168.1.1', 'private'],
      ['fc00::1', 'private'],
      ['fd12:3456::1', 'private'],
      ['169.254.169.254', 'link-local'],
      ['169.254.0.1', 'link-local'],
      ['fe80::1', 'link-local'],
      ['100.64.0.1', 'shared (CGNAT)'],
      ['100.127.255.254', 'shared (CGNAT)'],
      ['224.0.0.1', 'multicast'],
      ['239.255.255.250', 'multicast'],
      ['ff02::1', 'multicast'],
      ['0.0.0.0', 'unspecified'],
      ['::', 'unspecified'],
      ['::ffff:127.0.0.1', 'loopback'],
      ['::ffff:7f00:1', 'loopback'],
      ['::ffff:a9fe:a9fe', 'link-local'],
      ['::ffff:10.0.0.1', 'private'],
      ['[::1]', 'loopback'],
      ['fe80::1%eth0', 'link-local'],
      ['255.255.255.255', 'reserved'],
    ];
    for (const [address, reason] of refused)
      expect([address, refusedAddress(address)]).toEqual([address, reason]);
  });

  it('lets public addresses through, and refuses what is not an address', () => {
    for (const address of [
      '93.184.216.34',
      '8.8.8.8',
      '172.32.0.1',
      '100.128.0.1',
      '2606:4700::1111',
      '::ffff:8.8.8.8',
    ])
      expect([address, refusedAddress(address)]).toEqual([address, null]);
    expect(refusedAddress('example.com')).toBe('not an IP address');
  });

  it('resolves a name and refuses it when any address is refused, naming the address; lifted by allowPrivate', async () => {
    await expect(resolveChecked('localhost', false)).rejects.toThrow(
      /refused address (127\.0\.0\.1|::1) \(loopback\) for localhost/,
    );
    await expect(resolveChecked('[::ffff:127.0.0.1]', false)).rejects.toThrow(/loopback/);
    expect((await resolveChecked('127.0.0.1', true)).map((a) => a.address)).toEqual(['127.0.0.1']);
  });
});

describe('secrets the server makes', () => {
  it('makes valid Standard Webhooks secrets of 32 bytes, never the same twice, across refills', () => {
    // More than the bytes drawn from the system at once, so the draw is renewed in between.
    const secrets = Array.from({ length: 1_000 }, generateSecret);
    expect(new Set(secrets).size).toBe(secrets.length);
    for (const secret of secrets) {
      expect(checkSecret(secret)).toBe(secret);
      expect(Buffer.from(secret.slice('whsec_'.length), 'base64')).toHaveLength(32);
    }
    // Every byte value turns up: the bytes are random, not zeros left behind in the pool.
    const bytes = new Set(secrets.flatMap((s) => [...Buffer.from(s.slice(6), 'base64')]));
    expect(bytes.size).toBe(256);
  });
});

describe('what an answer means for a delivery', () => {
  const schedule = [1_000, 60_000];
  it('delivers on 2xx, disables on 410, and retries anything else by the schedule, then fails', () => {
    expect(outcomeOf({ statusCode: 204 }, 1, schedule)).toEqual({
      kind: 'delivered',
      statusCode: 204,
    });
    expect(outcomeOf({ statusCode: 410 }, 1, schedule)).toMatchObject({ kind: 'gone' });
    expect(outcomeOf({ statusCode: 302 }, 1, schedule)).toMatchObject({
      kind: 'retry',
      error: 'redirect 302 (not followed)',
    });
    expect(outcomeOf({ statusCode: 500 }, 2, schedule)).toMatchObject({
      kind: 'retry',
      error: 'answered 500',
    });
    expect(outcomeOf({ statusCode: null, error: 'refused' }, 3, schedule)).toEqual({
      kind: 'failed',
      statusCode: null,
      error: 'refused',
    });
  });

  it('puts each retry within ±10 % of its delay in the schedule, and not always at the same point', () => {
    const delays = Array.from({ length: 200 }, () => {
      const outcome = outcomeOf({ statusCode: 503 }, 2, schedule);
      if (outcome.kind !== 'retry') throw new Error(`expected a retry, got ${outcome.kind}`);
      return outcome.delayMs;
    });
    for (const delay of delays) {
      expect(delay).toBeGreaterThanOrEqual(54_000);
      expect(delay).toBeLessThanOrEqual(66_000);
    }
    expect(new Set(delays).size).toBeGreaterThan(100);
  });
});

describe('webhook configuration', () => {
  it('parses WEBHOOK_* and stops on a bad value naming the variable', () => {
    const base = { NODE_ENV: 'test' };
    expect(loadConfig(base).webhooks).toEqual({
      timeoutMs: 10_000,
      retryScheduleMs: [5000, 300000, 1800000, 7200000, 18000000, 36000000, 36000000],
      concurrency: 16,
      allowPrivate: false,
      pollIntervalMs: 1_000,
    });
    expect(
      loadConfig({
        ...base,
        WEBHOOK_RETRY_SCHEDULE_MS: '10, 20',
        WEBHOOK_ALLOW_PRIVATE: 'true',
        WEBHOOK_CONCURRENCY: '2',
        WEBHOOK_TIMEOUT_MS: '500',
        WEBHOOK_POLL_INTERVAL_MS: '50',
      }).webhooks,
    ).toEqual({
      timeoutMs: 500,
      retryScheduleMs: [10, 20],
      concurrency: 2,
      allowPrivate: true,
      pollIntervalMs: 50,
    });
    for (const [name, value] of [
      ['WEBHOOK_POLL_INTERVAL_MS', '0'],
      ['WEBHOOK_RETRY_SCHEDULE_MS', '1,x'],
      ['WEBHOOK_RETRY_SCHEDULE_MS', Array(21).fill('1').join(',')],
      ['WEBHOOK_RETRY_SCHEDULE_MS', '1,,2'],
      ['WEBHOOK_TIMEOUT_MS', '0'],
      ['WEBHOOK_CONCURRENCY', 'many'],
      ['WEBHOOK_ALLOW_PRIVATE', 'maybe'],
    ] as const)
      expect(() => loadConfig({ ...base, [name]: value })).toThrow(new RegExp(`^${name}:`));
  });
});
