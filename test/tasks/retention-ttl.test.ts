import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineTaskKind } from '../../src/tasks/kinds.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { START_TASK as START } from '../helpers/operations.js';
import { restClient } from '../helpers/rest.js';

describe('ttlMs clamping', () => {
  let t: TestApp;
  let alice: string;
  const keeper = defineTaskKind({
    name: 'keeper',
    description: 'kind default ttl within bounds',
    inputSchema: {},
    ttlMs: 120_000,
    run: async () => null,
  });
  const hoarder = defineTaskKind({
    name: 'hoarder',
    description: 'kind default ttl past the max',
    inputSchema: {},
    ttlMs: 1_000_000_000,
    run: async () => null,
  });

  beforeAll(async () => {
    t = await startTestApp({
      env: {
        TASK_MIN_TTL_MS: '5000',
        TASK_MAX_TTL_MS: '600000',
        TASK_DEFAULT_TTL_MS: '60000',
        ROLE: 'api',
      },
      kinds: [keeper, hoarder],
    });
    alice = await t.token('alice');
  });
  afterAll(() => t?.stop());

  async function ttlOf(kind: string, ttlMs?: number): Promise<number> {
    const res = await t.gql(
      START,
      {
        input: {
          kind,
          input: kind === 'sleep' ? { ms: 0 } : {},
          ...(ttlMs === undefined ? {} : { ttlMs }),
        },
      },
      alice,
    );
    expect(res.errors).toBeUndefined();
    const task = res.data.startTask;
    // expiresAt is always createdAt + the effective ttlMs, to the millisecond.
    expect(Date.parse(task.expiresAt) - Date.parse(task.createdAt)).toBe(task.ttlMs);
    return task.ttlMs;
  }

  it('raises a ttlMs below TASK_MIN_TTL_MS to the minimum', async () => {
    expect(await ttlOf('sleep', 10)).toBe(5_000);
    expect(await ttlOf('sleep', 0)).toBe(5_000);
    expect(await ttlOf('sleep', -1)).toBe(5_000);
  });

  it('lowers a ttlMs above TASK_MAX_TTL_MS to the maximum', async () => {
    expect(await ttlOf('sleep', 2_000_000_000)).toBe(600_000);
    expect(await ttlOf('sleep', 600_001)).toBe(600_000);
  });

  it('keeps a ttlMs within the bounds as given', async () => {
    expect(await ttlOf('sleep', 5_000)).toBe(5_000);
    expect(await ttlOf('sleep', 123_456)).toBe(123_456);
    expect(await ttlOf('sleep', 600_000)).toBe(600_000);
  });

  it('uses TASK_DEFAULT_TTL_MS when neither the request nor the kind gives one', async () => {
    expect(await ttlOf('sleep')).toBe(60_000);
  });

  it("uses the kind's default when the request gives none, clamped like any other", async () => {
    expect(await ttlOf('keeper')).toBe(120_000);
    expect(await ttlOf('hoarder')).toBe(600_000);
    expect(await ttlOf('keeper', 7_000)).toBe(7_000);
  });

  it('clamps the same way over REST and reports the effective ttlMs in the handle', async () => {
    const call = restClient(t.url);
    const low = await call('POST', '/v1/jobs', {
      token: alice,
      body: { kind: 'sleep', input: { ms: 0 }, ttlMs: 1 },
    });
    expect(low.status).toBe(202);
    expect(low.body.ttlMs).toBe(5_000);
    const high = await call('POST', '/v1/jobs', {
      token: alice,
      body: { kind: 'sleep', input: { ms: 0 }, ttlMs: 10_000_000_000 },
    });
    expect(high.status).toBe(202);
    expect(high.body.ttlMs).toBe(600_000);
    const none = await call('POST', '/v1/jobs', {
      token: alice,
      body: { kind: 'sleep', input: { ms: 0 } },
    });
    expect(none.body.ttlMs).toBe(60_000);
  });
});
