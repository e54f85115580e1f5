import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import { collect, eventually, startTestApp, type TestApp } from '../helpers/app.js';
import { sample } from '../helpers/metrics.js';

/**
 * `GET /metrics` (DESIGN §13): Prometheus text that moves as tasks run, on a real app over
 * real HTTP and WebSockets, and `METRICS_TOKEN` enforced.
 */

const START = `mutation Start($input: StartTaskInput!) { startTask(input: $input) { id } }`;
const GET = `query Poll($id: ID!) { task(id: $id) { status } }`;
const CANCEL = `mutation Cancel($id: ID!) { cancelTask(id: $id) { status } }`;
const FOLLOW = `subscription Follow($id: ID!) { taskUpdated(id: $id) { status } }`;

describe('GET /metrics', () => {
  let t: TestApp;
  let token: string;
  const scrape = async () => {
    const response = await fetch(`${t.url}/metrics`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    return response.text();
  };
  const start = async (input: Record<string, unknown>, extra: Record<string, unknown> = {}) => {
    const response = await t.gql(START, { input: { kind: 'sleep', input, ...extra } }, token);
    expect(response.errors).toBeUndefined();
    return response.data.startTask.id as string;
  };
  const status = async (id: string) => (await t.gql(GET, { id }, token)).data.task?.status;

  beforeAll(async () => {
    // No prefetch: a task waiting for the one slot stays in the database's queue, where the
    // queue series count it, rather than leased in this process's local queue.
    t = await startTestApp({
      env: { RUNNER_CONCURRENCY: '1', RUNNER_PREFETCH: '0', TASK_MIN_TTL_MS: '100' },
    });
    token = await t.token('alice');
  });
  afterAll(() => t?.stop());

  it('serves Node default series and zeroed task series before any work', async () => {
    const text = await scrape();
    expect(sample(text, 'process_cpu_user_seconds_total')).toBeGreaterThan(0);
    expect(sample(text, 'nodejs_heap_size_used_bytes')).toBeGreaterThan(0);
    expect(sample(text, 'taskhandle_queue_depth')).toBe(0);
    expect(sample(text, 'taskhandle_websockets')).toBe(0);
    expect(sample(text, 'taskhandle_graphql_subscriptions')).toBe(0);
    expect(sample(text, 'taskhandle_tasks', { kind: 'sleep' })).toBeUndefined();
    for (const reason of ['concurrency', 'rate_limit', 'time'])
      expect(sample(text, 'taskhandle_tasks_held', { reason })).toBe(0);
  });

  it('moves the HTTP, GraphQL, task, queue, run and WebSocket series as tasks run', async () => {
    const before = await scrape();
    const posts = (text: string) =>
      sample(text, 'taskhandle_http_request_duration_seconds_count', {
        method: 'POST',
        route: '/graphql',
        status: '200',
      }) ?? 0;

    // One slot: an hour-long sleep holds it (running before the others start, so no claim
    // can take them first), two more wait in the queue.
    const hour = await start({ ms: 3_600_000 });
    await eventually(async () => (t.app.runner?.holds(hour) ? true : undefined));
    const queued = [await start({ ms: 0 }), await start({ ms: 0 })];
    const ws = t.ws(token);
    const followed = collect(ws, FOLLOW, { id: hour });

    const busy = await eventually(async () => {
      const text = await scrape();
      return sample(text, 'taskhandle_queue_depth') === 2 &&
        sample(text, 'taskhandle_graphql_subscriptions') === 1
        ? text
        : undefined;
    }, 20_000);
    expect(sample(busy, 'taskhandle_queue_oldest_age_seconds')).toBeGreaterThan(0);
    expect(sample(busy, 'taskhandle_tasks', { kind: 'sleep', status: 'working' })).toBe(3);
    expect(sample(busy, 'taskhandle_websockets')).toBe(1);
    expect(posts(busy)).toBeGreaterThan(posts(before));
    expect(
      sample(busy, 'taskhandle_graphql_operation_duration_seconds_count', {
        operation: 'Start',
        type: 'mutation',
        result: 'ok',
      }),
    ).toBe(3);
    expect(
      sample(busy, 'taskhandle_graphql_operation_duration_seconds_count', {
        operation: 'Follow',
        type: 'subscription',
        result: 'ok',
      }),
    ).toBe(1);
    expect(sample(busy, 'taskhandle_claim_duration_seconds_count')).toBeGreaterThan(0);
    expect(sample(busy, 'taskhandle_task_queue_wait_seconds_count', { kind: 'sleep' })).toBe(1);

    // Cancel the hour: its subscription ends, the queue drains, the runs are counted.
    expect((await t.gql(CANCEL, { id: hour }, token)).data.cancelTask.status).toBe('CANCELLED');
    expect((await followed).error).toBeUndefined();
    for (const id of queued)
      await eventually(async () => ((await status(id)) === 'COMPLETED' ? true : undefined));
    await ws.dispose();

    const done = await eventually(async () => {
      const text = await scrape();
      return sample(text, 'taskhandle_tasks', { kind: 'sleep', status: 'completed' }) === 2 &&
        sample(text, 'taskhandle_websockets') === 0
        ? text
        : undefined;
    }, 20_000);
    expect(sample(done, 'taskhandle_tasks', { kind: 'sleep', status: 'cancelled' })).toBe(1);
    expect(sample(done, 'taskhandle_tasks', { kind: 'sleep', status: 'working' })).toBeUndefined();
    expect(sample(done, 'taskhandle_queue_depth')).toBe(0);
    expect(sample(done, 'taskhandle_queue_oldest_age_seconds')).toBe(0);
    expect(sample(done, 'taskhandle_graphql_subscriptions')).toBe(0);
    const runs = (outcome: string) =>
      sample(done, 'taskhandle_task_run_duration_seconds_count', { kind: 'sleep', outcome });
    expect(runs('completed')).toBe(2);
    expect(runs('cancelled')).toBe(1);
    expect(sample(done, 'taskhandle_task_queue_wait_seconds_count', { kind: 'sleep' })).toBe(3);
  });

  it('counts row-cache hits and misses, and the tasks watched for subscribers', async () => {
    const id = await start({ ms: 3_600_000 });
    const before = await scrape();
    const hits = (text: string) => sample(text, 'taskhandle_row_cache_hits_total') ?? 0;
    const misses = (text: string) => sample(text, 'taskhandle_row_cache_misses_total') ?? 0;
    expect(misses(before)).toBeGreaterThanOrEqual(0);
    // An unchanged task polled again is answered from the cache: hits grow, misses do not.
    await status(id);
    const warmed = await scrape();
    for (let i = 0; i < 5; i++) expect(await status(id)).toBe('WORKING');
    const polled = await scrape();
    expect(hits(polled) - hits(warmed)).toBeGreaterThanOrEqual(5);
    expect(misses(polled)).toBe(misses(warmed));
    expect(sample(polled, 'taskhandle_row_cache_rows')).toBeGreaterThan(0);

    const watchedBefore = sample(polled, 'taskhandle_watched_tasks') ?? 0;
    const other = await start({ ms: 3_600_000 });
    const ws = t.ws(token);
    const followed = collect(ws, FOLLOW, { id: other });
    await eventually(async () => {
      const text = await scrape();
      return (sample(text, 'taskhandle_watched_tasks') ?? 0) > watchedBefore ? true : undefined;
    });
    await t.gql(CANCEL, { id: other }, token);
    await t.gql(CANCEL, { id }, token);
    await followed;
    await ws.dispose();
  });

  it('counts purge batches and the rows they deleted', async () => {
    const id = await start({ ms: 0 }, { ttlMs: 100 });
    await eventually(async () => ((await status(id)) === undefined ? true : undefined));
    const before = sample(await scrape(), 'taskhandle_purged_tasks_total') ?? 0;
    await t.app.purger!.runOnce();
    const text = await scrape();
    expect(sample(text, 'taskhandle_purged_tasks_total')).toBeGreaterThanOrEqual(before + 1);
    expect(sample(text, 'taskhandle_purge_batches_total')).toBeGreaterThanOrEqual(1);
  });

  it('labels unknown paths as one route, whatever they are', async () => {
    for (const path of ['/nope', '/nope/123', '/a-b-c']) await fetch(`${t.url}${path}`);
    const text = await scrape();
    expect(
      sample(text, 'taskhandle_http_request_duration_seconds_count', {
        route: 'unmatched',
        status: '404',
      }),
    ).toBe(3);
    expect(text).not.toContain('/nope');
  });
});

describe('METRICS_TOKEN', () => {
  let t: TestApp;
  const METRICS_TOKEN = 'metrics-token-0123456789';
  beforeAll(async () => {
    t = await startTestApp({ env: { METRICS_TOKEN, ROLE: 'worker' } });
  });
  afterAll(() => t?.stop());

  it('is needed as a bearer token, on every role', async () => {
    const none = await fetch(`${t.url}/metrics`);
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toBe('Bearer');
    const wrong = await fetch(`${t.url}/metrics`, {
      headers: { authorization: 'Bearer metrics-token-0123456780' },
    });
    expect(wrong.status).toBe(401);
    const user = await fetch(`${t.url}/metrics`, {
      headers: { authorization: `Bearer ${await t.token('alice')}` },
    });
    expect(user.status).toBe(401);
    const right = await fetch(`${t.url}/metrics`, {
      headers: { authorization: `Bearer ${METRICS_TOKEN}` },
    });
    expect(right.status).toBe(200);
    expect(await right.text()).toContain('taskhandle_queue_depth');
  });
});

describe('METRICS_TOKEN configuration', () => {
  it('stops the start naming the variable when the value cannot be a bearer token', () => {
    for (const bad of ['short', 'has spaces in it, sixteen+', 'quote"d-0123456789abcdef'])
      expect(() => loadConfig({ METRICS_TOKEN: bad })).toThrow(/^METRICS_TOKEN: /);
    expect(loadConfig({ METRICS_TOKEN: 'abcdefghijklmnop' }).metricsToken).toBe('abcdefghijklmnop');
  });
});

describe('taskhandle_tasks_held', () => {
  let t: TestApp;
  let token: string;

  beforeAll(async () => {
    t = await startTestApp({ env: { RUNNER_CONCURRENCY: '4' } });
    token = await t.token('alice');
  });
  afterAll(() => t?.stop());

  const scrape = async () => (await fetch(`${t.url}/metrics`)).text();
  const held = (text: string, reason: string) => sample(text, 'taskhandle_tasks_held', { reason });
  const start = async (input: Record<string, unknown>, extra: Record<string, unknown> = {}) => {
    const response = await t.gql(START, { input: { kind: 'sleep', input, ...extra } }, token);
    expect(response.errors).toBeUndefined();
    return response.data.startTask.id as string;
  };

  it('counts held tasks by reason: concurrency, rate limit and time', async () => {
    // An hour-long task fills both of its keys: a start an hour, one at a time.
    const limited = { rateLimitKey: 'metrics', rateLimit: { limit: 1, periodMs: 3_600_000 } };
    const keyed = { concurrencyKey: 'metrics', concurrencyLimit: 1 };
    const ids = [await start({ ms: 3_600_000 }, { ...limited, ...keyed })];
    await eventually(
      async () => (sample(await scrape(), 'taskhandle_queue_depth') === 0 ? true : undefined),
      20_000,
    );
    ids.push(
      await start({ ms: 0 }, limited),
      await start({ ms: 0 }, keyed),
      await start({ ms: 0 }, { delayMs: 3_600_000 }),
      await start({ ms: 0 }, { delayMs: 3_600_000 }),
    );
    const text = await eventually(async () => {
      const scraped = await scrape();
      return held(scraped, 'concurrency') === 1 && held(scraped, 'rate_limit') === 1
        ? scraped
        : undefined;
    }, 20_000);
    expect(held(text, 'time')).toBe(2);
    for (const id of ids) await t.gql(CANCEL, { id }, token);
    const after = await eventually(async () => {
      const scraped = await scrape();
      return held(scraped, 'time') === 0 ? scraped : undefined;
    }, 20_000);
    expect(held(after, 'concurrency')).toBe(0);
    expect(held(after, 'rate_limit')).toBe(0);
  });
});
