import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, startTestApp, type TestApp } from '../helpers/app.js';
import { backend, freshDatabase, type TestDatabase } from '../helpers/db.js';
import { connectMcp, type McpClient } from '../helpers/mcp.js';
import { rest } from '../helpers/rest.js';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';

/**
 * The database's fail-fast rule (DESIGN §12) on every face. The database's timeouts are set
 * to ten minutes, so only the rule can answer in time: once the outage is seen, requests
 * waiting on the database fail, and new ones fail at once, until a probe succeeds again.
 * Postgres only: PGlite has no network.
 */

const TEN_MINUTES = '600000';
/** Far beyond what the rule takes (about 2 s) and far below the database's timeouts. */
const GENEROUS_MS = 20_000;
const signal = () => AbortSignal.timeout(GENEROUS_MS);

let database: TestDatabase;
let proxy: TcpProxy;
let t: TestApp;
let token: string;
let mcp: McpClient;

describe.skipIf(backend === 'pglite')('a black-holed database', { timeout: 120_000 }, () => {
  beforeAll(async () => {
    database = await freshDatabase();
    const target = new URL(database.url!);
    proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port || 5432) });
    t = await startTestApp({
      database: { ...database, url: proxy.via(database.url!), drop: async () => {} },
      env: { DB_STATEMENT_TIMEOUT_MS: TEN_MINUTES, DB_CONNECT_TIMEOUT_MS: TEN_MINUTES },
    });
    token = await t.token('alice');
    mcp = await connectMcp(t.url, token);
  });
  afterAll(async () => {
    await mcp?.close();
    proxy?.restore();
    await t?.stop();
    await proxy?.close();
    await database?.drop();
  });

  const listJobs = (id: string) =>
    fetch(`${t.url}/v1/jobs?id=${id}`, {
      headers: { authorization: `Bearer ${token}` },
      signal: signal(),
    });
  const graphqlTask = async (id: string) => {
    const res = await fetch(`${t.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({
        query:
          'query($id: ID!) { tasks(first: 5) { edges { node { id } } } task(id: $id) { id status } }',
        variables: { id },
      }),
      signal: signal(),
    });
    return (await res.json()) as {
      data?: any;
      errors?: Array<{ message: string; extensions: any; path?: string[] }>;
    };
  };
  const a2aListTasks = (id: string) =>
    fetch(`${t.url}/a2a`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'a2a-version': '1.0',
        authorization: `Bearer ${token}`,
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'ListTasks',
        params: { contextId: id },
      }),
      signal: signal(),
    });

  async function expect503(res: Response) {
    expect(res.status, `${res.url} ${await res.clone().text()}`).toBe(503);
    expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await res.json()).toMatchObject({ status: 503, code: 'SERVICE_UNAVAILABLE' });
  }

  it('fails waiting and new requests on every face, then recovers by itself', async () => {
    const started = await rest(t.url, 'POST', '/v1/jobs', {
      token,
      body: { kind: 'sleep', input: { ms: 0 } },
    });
    expect(started.status, started.text).toBe(202);
    const id = started.body.taskId as string;
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    // Finished before the outage, so its row is final and this process serves it from its
    // cache throughout; otherwise whether `task` fails too would race the worker.
    const before = await eventually(async () => {
      const answer = await graphqlTask(id);
      return answer.data?.task?.status === 'COMPLETED' ? answer : undefined;
    }, GENEROUS_MS);
    expect(before.data.task.id).toBe(id);

    proxy.blackhole();
    // Requests already waiting on the database when it goes silent.
    const waiting = [listJobs(id), graphqlTask(id)] as const;
    await proxy.until(() => proxy.stalled >= 1);
    await expect503(await waiting[0]);
    const held = await waiting[1];
    expect(held.errors?.[0]?.extensions.code).toBe('SERVICE_UNAVAILABLE');

    // New ones, on every face, fail at once.
    await expect503(await listJobs(id));
    const masked = await graphqlTask(id);
    // Only the list fails: the finished task's row is served from the cache.
    expect(masked.errors, JSON.stringify(masked)).toHaveLength(1);
    expect(masked.errors?.[0]?.path).toEqual(['tasks']);
    expect(masked.errors?.[0]?.extensions.code).toBe('SERVICE_UNAVAILABLE');
    expect(masked.errors?.[0]?.message).not.toMatch(/probe|ECONN|timeout|pg/i);
    await expect503(await a2aListTasks(id));
    const refused = await mcp.client.experimental.tasks
      .listTasks(undefined, { signal: signal() })
      .then(
        () => undefined,
        (err: { code?: number; data?: any }) => err,
      );
    expect(refused?.code).toBe(-32053);
    expect(refused?.data).toMatchObject({
      code: 'SERVICE_UNAVAILABLE',
      retryAfterMs: expect.any(Number),
    });
    const ready = await fetch(`${t.url}/readyz`, { signal: signal() });
    expect(ready.status).toBe(503);

    // The network returns: the next probe closes the breaker.
    proxy.restore();
    const back = await eventually(async () => {
      const answer = await graphqlTask(id);
      if (answer.errors) expect(answer.errors[0]?.extensions.code).toBe('SERVICE_UNAVAILABLE');
      return answer.errors ? undefined : answer;
    }, GENEROUS_MS);
    expect(back.data.task.id).toBe(id);
    expect((await listJobs(id)).status).toBe(200);
    expect((await a2aListTasks(id)).status).toBe(200);
  });
});
