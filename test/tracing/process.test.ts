import type { Kysely } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../../src/db/types.js';
import { eventually } from '../helpers/app.js';
import { backend, freshDatabase, kyselyOn, type TestDatabase } from '../helpers/db.js';
import {
  type OtlpReceiver,
  type ReceivedSpan,
  startOtlpReceiver,
} from '../helpers/otlp-receiver.js';
import { type ServerProcess, spawnServer, spawnServersInto } from '../helpers/process.js';
import { type Receiver, startReceiver } from '../helpers/receiver.js';
import { readWriteToken } from '../helpers/secret.js';

/**
 * Tracing across processes (DESIGN §13): an api and workers, each exporting its spans over
 * OTLP/HTTP JSON to a receiver in the test; the trace of the start request goes on in the
 * worker that takes the task over after the first was killed mid-task, and in its webhook
 * delivery. Postgres only, where processes share a database.
 */

const START = `mutation StartTask($input: StartTaskInput!) { startTask(input: $input) { id } }`;
/** The caller's own trace: the start request continues it. */
const CLIENT_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const CLIENT_SPAN = '00f067aa0ba902b7';

describe.skipIf(backend !== 'pg')('tracing across processes (Postgres)', () => {
  let database: TestDatabase;
  let db: Kysely<Database>;
  let otlp: OtlpReceiver;
  let hooks: Receiver;
  const processes: ServerProcess[] = [];
  beforeAll(async () => {
    database = await freshDatabase();
    db = kyselyOn(database, 2);
    otlp = await startOtlpReceiver();
    hooks = await startReceiver(() => 200);
  });
  afterAll(async () => {
    await Promise.all(processes.map((p) => p.stop('SIGKILL')));
    await hooks?.close();
    await otlp?.close();
    await db?.destroy();
    await database?.drop();
  });

  const envFor = (service: string) => ({
    OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    OTEL_SERVICE_NAME: service,
    // Exported within 50 ms of ending: a worker killed later has sent what it ended.
    OTEL_BSP_SCHEDULE_DELAY: '50',
    WEBHOOK_ALLOW_PRIVATE: 'true',
    TASK_LEASE_MS: '1500',
    WEBHOOK_TIMEOUT_MS: '2000',
  });
  const find = (predicate: (span: ReceivedSpan) => boolean) =>
    eventually(async () => otlp.spans.find(predicate), 30_000);

  it('continues the start request’s trace in the attempt and webhook delivery of another worker after the first was killed mid-task', async () => {
    const [api, first] = await spawnServersInto(
      processes,
      { role: 'api', databaseUrl: database.url!, env: envFor('th-api') },
      { role: 'worker', databaseUrl: database.url!, env: envFor('th-worker-1') },
    );
    const token = await readWriteToken();
    const response = await fetch(`${api.url}/graphql`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        authorization: `Bearer ${token}`,
        traceparent: `00-${CLIENT_TRACE}-${CLIENT_SPAN}-01`,
      },
      body: JSON.stringify({
        query: START,
        variables: { input: { kind: 'sleep', input: { ms: 3_000 }, webhook: { url: hooks.url } } },
      }),
    });
    const taskId = ((await response.json()) as any).data.startTask.id as string;

    // The api's spans: the request continues the caller's trace, the operation nests in it,
    // and the task stores the operation's span as its parent.
    const request = await find((s) => s.service === 'th-api' && s.name === 'POST /graphql');
    expect(request).toMatchObject({ traceId: CLIENT_TRACE, parentSpanId: CLIENT_SPAN, kind: 2 });
    expect(request.attributes['http.response.status_code']).toBe(200);
    const operation = await find((s) => s.service === 'th-api' && s.name === 'mutation StartTask');
    expect(operation).toMatchObject({ traceId: CLIENT_TRACE, parentSpanId: request.spanId });
    const row = await db
      .selectFrom('tasks')
      .select('trace_parent')
      .where('id', '=', taskId)
      .executeTakeFirstOrThrow();
    expect(row.trace_parent).toBe(`00-${CLIENT_TRACE}-${operation.spanId}-01`);

    // The first worker claims it (its claim span is exported) and is killed mid-task.
    const firstClaim = await find(
      (s) => s.name === 'taskhandle.claim' && s.attributes['taskhandle.task.id'] === taskId,
    );
    expect(firstClaim).toMatchObject({
      service: 'th-worker-1',
      traceId: CLIENT_TRACE,
      parentSpanId: operation.spanId,
    });
    expect(firstClaim.attributes['taskhandle.task.attempt']).toBe(1);
    await first.stop('SIGKILL');

    // Another worker, another process, takes the task over once the lease lapses.
    const second = await spawnServer({
      role: 'worker',
      databaseUrl: database.url!,
      env: envFor('th-worker-2'),
    });
    processes.push(second);
    const attempt = await find(
      (s) =>
        s.name === 'taskhandle.attempt' &&
        s.attributes['taskhandle.task.id'] === taskId &&
        s.attributes['taskhandle.task.attempt'] === 2,
    );
    expect(attempt).toMatchObject({
      service: 'th-worker-2',
      traceId: CLIENT_TRACE,
      parentSpanId: operation.spanId,
    });
    expect(attempt.attributes).toMatchObject({
      'taskhandle.task.kind': 'sleep',
      'taskhandle.task.outcome': 'completed',
    });
    // No span of the first attempt reached the receiver: its worker died before ending it.
    expect(
      otlp.spans.some(
        (s) => s.name === 'taskhandle.attempt' && s.attributes['taskhandle.task.attempt'] === 1,
      ),
    ).toBe(false);

    // The delivery of `completed`, sent by the second worker, is a span of the same trace,
    // and the receiver was sent that span as its parent.
    const completed = await eventually(
      async () => hooks.received.find((r) => r.json?.data?.status === 'completed'),
      30_000,
    );
    const delivery = await find(
      (s) =>
        s.name === 'taskhandle.webhook' &&
        s.attributes['taskhandle.delivery.id'] === completed.headers['webhook-id'],
    );
    expect(delivery).toMatchObject({
      service: 'th-worker-2',
      traceId: CLIENT_TRACE,
      parentSpanId: operation.spanId,
      kind: 3,
    });
    expect(delivery.attributes).toMatchObject({
      'http.response.status_code': 200,
      'taskhandle.delivery.outcome': 'delivered',
      'taskhandle.task.id': taskId,
    });
    expect(completed.headers.traceparent).toBe(`00-${CLIENT_TRACE}-${delivery.spanId}-01`);
    // Traces only: no metrics or logs were exported.
    expect(otlp.others).toEqual([]);
    await Promise.all([api.stop(), second.stop()]);
  }, 180_000);
});
