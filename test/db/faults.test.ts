import { EventEmitter, once } from 'node:events';
import { createClient } from 'graphql-ws';
import type pg from 'pg';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { backend, freshDatabaseAndClient, type TestDatabase } from '../helpers/db.js';
import { FOLLOW_VERSIONS as FOLLOW } from '../helpers/operations.js';
import { gqlAt, type ServerProcess, spawnServer } from '../helpers/process.js';
import { readWriteToken } from '../helpers/secret.js';
import { proxyFor, type TcpProxy } from '../helpers/tcp-proxy.js';

/**
 * Database faults a polite `pg_terminate_backend` does not produce, between a real server
 * process and Postgres: every connection reset mid-query (a crash, a middlebox dropping the
 * flow) and a black hole (packets dropped, nothing answers). The process must survive, answer
 * quickly with SERVICE_UNAVAILABLE / 503 + Retry-After, and recover by itself. A separate
 * process, so that an unhandled 'error' event really ends it. Postgres only: PGlite has no
 * network.
 */

/** Small, so a request held by a black hole fails in about a second. */
const FAULT_ENV = {
  DB_STATEMENT_TIMEOUT_MS: '1000',
  DB_CONNECT_TIMEOUT_MS: '500',
  LOG_LEVEL: 'info',
};
/** Bound on any one answer while the database is gone: far above the timeouts above. */
const ANSWER_WITHIN_MS = 8_000;

const LIST = 'query { tasks(first: 5) { edges { node { id status } } } }';
const START = `mutation($input: StartTaskInput!) { startTask(input: $input) { id status } }`;

let database: TestDatabase;
let proxy: TcpProxy;
let server: ServerProcess;
let token: string;
let direct: pg.Client;

async function graphql(query: string, variables: Record<string, unknown> = {}) {
  const response = await fetch(`${server.url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ query, variables }),
    signal: AbortSignal.timeout(ANSWER_WITHIN_MS),
  });
  return { status: response.status, body: (await response.json()) as any };
}

async function restList() {
  const response = await fetch(`${server.url}/v1/jobs`, {
    headers: { authorization: `Bearer ${token}` },
    signal: AbortSignal.timeout(ANSWER_WITHIN_MS),
  });
  return {
    status: response.status,
    headers: response.headers,
    body: (await response.json()) as any,
  };
}

async function readyz() {
  const response = await fetch(`${server.url}/readyz`, {
    signal: AbortSignal.timeout(ANSWER_WITHIN_MS),
  });
  return response.status;
}

/** Asserts the process still runs and never reported an unhandled error. */
function expectAlive() {
  expect(server.child.exitCode).toBeNull();
  expect(server.child.signalCode).toBeNull();
  expect(server.stderr()).not.toMatch(/Unhandled|ECONNRESET|Connection terminated/);
}

/** Retries until the server answers a list query from the database again. */
async function recovered(): Promise<void> {
  for (;;) {
    const { body } = await graphql(LIST);
    if (!body.errors) return;
    expect(body.errors[0].extensions.code).toBe('SERVICE_UNAVAILABLE');
  }
}

/** Opens as many pool connections as the load of `n` concurrent requests does. */
async function warm(n: number): Promise<void> {
  const answers = await Promise.all(Array.from({ length: n }, () => graphql(LIST)));
  for (const { body } of answers) expect(body.errors).toBeUndefined();
}

/** A mix of GraphQL and REST reads: what `n` clients asking at once see. */
function load(n: number) {
  return Array.from({ length: n }, (_, i) =>
    i % 2 === 0
      ? graphql(LIST).then((r) => ({ graphql: r }))
      : restList().then((r) => ({ rest: r })),
  );
}

function expectUnavailable(answer: { graphql?: any; rest?: any }) {
  if (answer.graphql) {
    expect(answer.graphql.status).toBe(200);
    expect(answer.graphql.body.errors).toHaveLength(1);
    expect(answer.graphql.body.errors[0].extensions.code).toBe('SERVICE_UNAVAILABLE');
    expect(answer.graphql.body.errors[0].message).not.toMatch(/ECONN|terminated|timeout|pg/i);
  } else {
    expect(answer.rest.status).toBe(503);
    expect(answer.rest.body.code).toBe('SERVICE_UNAVAILABLE');
    expect(Number(answer.rest.headers.get('retry-after'))).toBeGreaterThan(0);
  }
}

// Each test starts a server process (seconds on a busy machine) and waits out a few timeouts.
describe.skipIf(backend === 'pglite')(
  'database faults through a TCP proxy',
  { timeout: 90_000 },
  () => {
    beforeAll(async () => {
      ({ database, client: direct } = await freshDatabaseAndClient());
      token = await readWriteToken();
    });
    afterAll(async () => {
      await direct?.end();
      await database?.drop();
    });
    beforeEach(async () => {
      proxy = await proxyFor(database.url!);
      server = await spawnServer({
        role: 'all',
        databaseUrl: proxy.via(database.url!),
        env: FAULT_ENV,
      });
    });
    afterEach(async () => {
      await server?.stop('SIGKILL');
      await proxy?.close();
    });

    it('survives every connection being reset mid-query with 16 clients in flight, and recovers', async () => {
      await warm(16);
      const pooled = proxy.open - 1; // all but the listening connection
      expect(pooled).toBeGreaterThan(0);
      proxy.blackhole();
      const answers = load(16);
      // Every pooled connection has a query out that will not be answered: reset them all now.
      await proxy.until(() => proxy.stalled >= pooled);
      proxy.reset();
      for (const answer of await Promise.all(answers)) expectUnavailable(answer);
      expectAlive();
      proxy.restore();
      await recovered();
      expectAlive();
      // The cause was logged, though no client saw it.
      await until(server.child.stdout!, 'data', () =>
        server
          .logs()
          .some((l) => l.level === 40 && /ECONNRESET|terminated/.test(JSON.stringify(l.err))),
      );
    });

    it('survives a reset with one /readyz in flight, which answers 503', async () => {
      expect(await readyz()).toBe(200);
      proxy.blackhole();
      const ready = readyz();
      await proxy.until(() => proxy.stalled >= 1);
      proxy.reset();
      expect(await ready).toBe(503);
      expectAlive();
      proxy.restore();
      for (;;) if ((await readyz()) === 200) break;
      expectAlive();
    });

    it('black-holed: /readyz 503, GraphQL SERVICE_UNAVAILABLE, REST 503 + Retry-After; alive when the network returns', async () => {
      await warm(4);
      proxy.blackhole();
      expect(await readyz()).toBe(503);

      // Held pool connections, then new ones that hear nothing: both fail within the timeouts.
      for (const answer of await Promise.all(load(16))) expectUnavailable(answer);
      for (const answer of await Promise.all(load(4))) expectUnavailable(answer);
      expectAlive();
      // The network returns: whatever was held back is delivered late.
      proxy.restore();
      await recovered();
      expect(await readyz()).toBe(200);
      expectAlive();
    });

    it('black-holed with long database timeouts: /readyz still answers 503, bounded on its own', async () => {
      await server.stop('SIGKILL');
      server = await spawnServer({
        role: 'all',
        databaseUrl: proxy.via(database.url!),
        env: { ...FAULT_ENV, DB_STATEMENT_TIMEOUT_MS: '60000', DB_CONNECT_TIMEOUT_MS: '60000' },
      });
      expect(await readyz()).toBe(200);
      proxy.blackhole();
      // Neither the query nor a new connection gives up within the test's bound: /readyz does,
      // by its own timeout or by the breaker, whose probe may fail first when the worker's
      // claims had been waiting before the check began. Either bounds the answer.
      expect(await readyz()).toBe(503);
      await until(server.child.stdout!, 'data', () =>
        server
          .logs()
          .some(
            (l) =>
              l.msg === 'readiness check timed out after 2000 ms' ||
              String(l.msg).startsWith('database unreachable: failing requests at once'),
          ),
      );
      proxy.restore();
      for (;;) if ((await readyz()) === 200) break;
      expectAlive();
    });

    it('black-holed, then reset when the network returns (the peer gave up): alive and recovered', async () => {
      await warm(4);
      proxy.blackhole();
      for (const answer of await Promise.all(load(6))) expectUnavailable(answer);
      proxy.reset();
      proxy.restore();
      await recovered();
      expect(await readyz()).toBe(200);
      expectAlive();
    });

    it('completes a task committed before the cut and gives its subscriber the final state', async () => {
      const started = await gqlAt(
        server.url,
        START,
        { input: { kind: 'sleep', input: { ms: 2_000, steps: 4 } } },
        token,
      );
      expect(started.errors).toBeUndefined();
      const id = started.data.startTask.id as string;
      const ws = createClient({
        url: server.wsUrl,
        webSocketImpl: WebSocket,
        retryAttempts: 0,
        connectionParams: { authorization: `Bearer ${token}` },
      });
      const statuses: string[] = [];
      const seen = new EventEmitter();
      const final = new Promise<string>((resolve, reject) => {
        ws.subscribe<{ taskUpdated: { status: string } }>(
          { query: FOLLOW, variables: { id } },
          {
            next: ({ data, errors }) => {
              if (errors) reject(new Error(JSON.stringify(errors)));
              if (data) statuses.push(data.taskUpdated.status);
              seen.emit('status');
            },
            error: reject,
            complete: () => resolve(statuses.at(-1)!),
          },
        );
      });
      try {
        // Running here: the subscriber has seen a progress report, which only the handler
        // writes. WORKING alone is not enough: the claim may commit and be announced while its
        // answer to this process is still on the wire, and a black hole then swallows it (the
        // task stays leased until the lease lapses, and no handler runs during the outage).
        await until(seen, 'status', () => statuses.filter((s) => s === 'WORKING').length >= 2);
        // The database goes away while the handler runs; it finishes, and its result cannot land.
        proxy.blackhole();
        expectUnavailable({ graphql: await graphql(LIST) });
        await until(server.child.stdout!, 'data', () =>
          server.logs().some((l) => l.msg === 'recording the outcome failed; retrying'),
        );
        proxy.reset();
        const during = await direct.query('select status from tasks where id = $1', [id]);
        expect(during.rows[0].status).toBe('working');
        proxy.restore();
        expect(await final).toBe('COMPLETED');
        const after = await direct.query(
          'select status, attempt, result from tasks where id = $1',
          [id],
        );
        // Recorded by the run that finished during the outage, not by a second attempt.
        expect(after.rows[0]).toMatchObject({ status: 'completed', attempt: 1 });
        expect(after.rows[0].result.sleptMs).toBeGreaterThanOrEqual(2_000);
        // The listening connection was reset too, and came back by itself.
        await until(server.child.stdout!, 'data', () =>
          server.logs().some((l) => l.msg === 'listening connection restored'),
        );
        expectAlive();
      } finally {
        await ws.dispose();
      }
    });
  },
);

/** Resolves once `condition()` holds, checked each time `emitter` emits `event`. */
async function until(emitter: EventEmitter, event: string, condition: () => boolean) {
  while (!condition()) await once(emitter, event);
}
