import { context, propagation, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { NodeSDK, tracing } from '@opentelemetry/sdk-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import { tracingWanted } from '../../src/config/tracing.js';
import { contextOf, currentTraceParent, tracingOn } from '../../src/tracing/tracer.js';
import { eventually, startTestApp, type TestApp } from '../helpers/app.js';
import { type Receiver, startReceiver } from '../helpers/receiver.js';

/**
 * Tracing in one process (DESIGN §13), on either backend: off by default, at no cost and with
 * nothing stored; on, with an SDK collecting spans in memory, the HTTP request continues the
 * caller's trace, the task stores it, and its attempt and webhook delivery are its children.
 * Across processes and a killed worker: tracing-process.test.ts.
 */

const TRACE = '0af7651916cd43dd8448eb211c80319c';
const SPAN = 'b7ad6b7169203331';
const CALLER = `00-${TRACE}-${SPAN}-01`;

describe('trace context helpers', () => {
  it('asks for the SDK only when the OpenTelemetry variables do', () => {
    expect(tracingWanted({})).toBe(false);
    expect(tracingWanted({ OTEL_SERVICE_NAME: 'x' })).toBe(false);
    expect(tracingWanted({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' })).toBe(true);
    expect(tracingWanted({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://c:4318/v1/traces' })).toBe(
      true,
    );
    expect(tracingWanted({ OTEL_EXPORTER_OTLP_ENDPOINT: ' ' })).toBe(false);
    expect(tracingWanted({ OTEL_TRACES_EXPORTER: 'console' })).toBe(true);
    expect(tracingWanted({ OTEL_TRACES_EXPORTER: 'none' })).toBe(false);
    expect(
      tracingWanted({ OTEL_TRACES_EXPORTER: 'none', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c' }),
    ).toBe(false);
    expect(
      tracingWanted({ OTEL_SDK_DISABLED: 'true', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c' }),
    ).toBe(false);
  });

  it('reads the service name and refuses an OTLP protocol other than the two it names', () => {
    expect(loadConfig({}).tracing).toEqual({ enabled: false, serviceName: 'taskhandle' });
    expect(
      loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_SERVICE_NAME: 'jobs' })
        .tracing,
    ).toEqual({ enabled: true, serviceName: 'jobs' });
    for (const protocol of ['http/json', 'http/protobuf'])
      expect(
        loadConfig({ OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_PROTOCOL: protocol }).tracing
          .enabled,
      ).toBe(true);
    expect(() =>
      loadConfig({ OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_PROTOCOL: 'thrift' }),
    ).toThrow(/OTEL_EXPORTER_OTLP_PROTOCOL: expected http\/protobuf or http\/json/);
    // Tracing off: the variable is not read.
    expect(loadConfig({ OTEL_EXPORTER_OTLP_PROTOCOL: 'thrift' }).tracing.enabled).toBe(false);
  });

  it('round-trips a traceparent and starts afresh from anything malformed', () => {
    expect(currentTraceParent(contextOf(CALLER))).toBe(CALLER);
    expect(currentTraceParent(contextOf(`00-${TRACE}-${SPAN}-00`))).toBe(`00-${TRACE}-${SPAN}-00`);
    for (const bad of [
      null,
      undefined,
      '',
      'garbage',
      `00-${'0'.repeat(32)}-${SPAN}-01`,
      `00-${TRACE}-${'0'.repeat(16)}-01`,
      `00-${TRACE.toUpperCase()}-${SPAN}-01`,
      `01-${TRACE}-${SPAN}-01`,
    ])
      expect(currentTraceParent(contextOf(bad))).toBeNull();
  });
});

async function startJob(t: TestApp, token: string, body: unknown): Promise<string> {
  const response = await fetch(`${t.url}/v1/jobs`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      authorization: `Bearer ${token}`,
      traceparent: CALLER,
    },
    body: JSON.stringify(body),
  });
  expect(response.status).toBe(202);
  return ((await response.json()) as { taskId: string }).taskId;
}

async function storedTraceParent(t: TestApp, id: string): Promise<string | null> {
  const row = await t.app.db.kysely
    .selectFrom('tasks')
    .select('trace_parent')
    .where('id', '=', id)
    .executeTakeFirstOrThrow();
  return row.trace_parent;
}

// Off first: the SDK of the next block stays registered in this process until its end.
describe('tracing off (no SDK)', () => {
  let t: TestApp;
  let hooks: Receiver;
  beforeAll(async () => {
    hooks = await startReceiver(() => 200);
    t = await startTestApp({ env: { WEBHOOK_ALLOW_PRIVATE: 'true' } });
  });
  afterAll(async () => {
    await t?.stop();
    await hooks?.close();
  });

  it('stores no trace context and sends no traceparent, whatever the caller sent', async () => {
    expect(tracingOn()).toBe(false);
    const token = await t.token('alice');
    const id = await startJob(t, token, {
      kind: 'sleep',
      input: { ms: 0 },
      webhook: { url: hooks.url },
    });
    const [delivery] = await hooks.waitFor(1);
    expect(delivery!.headers.traceparent).toBeUndefined();
    expect(await storedTraceParent(t, id)).toBeNull();
  });
});

describe('tracing on (an SDK collecting spans in memory)', () => {
  const exporter = new tracing.InMemorySpanExporter();
  let sdk: NodeSDK;
  let t: TestApp;
  let hooks: Receiver;
  beforeAll(async () => {
    sdk = new NodeSDK({
      serviceName: 'taskhandle-test',
      spanProcessors: [new tracing.SimpleSpanProcessor(exporter)],
      metricReaders: [],
      logRecordProcessors: [],
      instrumentations: [],
    });
    sdk.start();
    hooks = await startReceiver(() => 200);
    t = await startTestApp({ env: { WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_TIMEOUT_MS: '2000' } });
  });
  afterAll(async () => {
    await t?.stop();
    await hooks?.close();
    await sdk?.shutdown();
    trace.disable();
    context.disable();
    propagation.disable();
  });

  const spans = () => exporter.getFinishedSpans();
  const spanOf = (name: string, taskId: string) =>
    eventually(async () =>
      spans().find((s) => s.name === name && s.attributes['taskhandle.task.id'] === taskId),
    );

  it('makes the attempt and the webhook delivery children of the request that started the task', async () => {
    expect(tracingOn()).toBe(true);
    const token = await t.token('alice');
    const id = await startJob(t, token, {
      kind: 'sleep',
      input: { ms: 0 },
      webhook: { url: hooks.url },
    });
    const request = await eventually(async () => spans().find((s) => s.name === 'POST /v1/jobs'));
    expect(request.kind).toBe(SpanKind.SERVER);
    expect(request.spanContext().traceId).toBe(TRACE);
    expect(request.parentSpanContext?.spanId).toBe(SPAN);
    expect(request.attributes).toMatchObject({
      'http.request.method': 'POST',
      'http.route': '/v1/jobs',
      'http.response.status_code': 202,
    });
    const requestSpan = request.spanContext().spanId;
    expect(await storedTraceParent(t, id)).toBe(`00-${TRACE}-${requestSpan}-01`);

    const claim = await spanOf('taskhandle.claim', id);
    const attempt = await spanOf('taskhandle.attempt', id);
    for (const span of [claim, attempt]) {
      expect(span.spanContext().traceId).toBe(TRACE);
      expect(span.parentSpanContext?.spanId).toBe(requestSpan);
    }
    expect(attempt.attributes).toMatchObject({
      'taskhandle.task.kind': 'sleep',
      'taskhandle.task.attempt': 1,
      'taskhandle.task.outcome': 'completed',
    });

    const received = await hooks.waitFor(2);
    const webhookSpans = await eventually(async () => {
      const found = spans().filter(
        (s) => s.name === 'taskhandle.webhook' && s.attributes['taskhandle.task.id'] === id,
      );
      return found.length === 2 ? found : undefined;
    });
    for (const span of webhookSpans) {
      expect(span.kind).toBe(SpanKind.CLIENT);
      expect(span.spanContext().traceId).toBe(TRACE);
      expect(span.parentSpanContext?.spanId).toBe(requestSpan);
      expect(span.attributes).toMatchObject({
        'http.response.status_code': 200,
        'taskhandle.delivery.outcome': 'delivered',
      });
      // The receiver was sent this attempt as the parent of whatever it does.
      const delivery = received.find(
        (r) => r.headers['webhook-id'] === span.attributes['taskhandle.delivery.id'],
      );
      expect(delivery?.headers.traceparent).toBe(`00-${TRACE}-${span.spanContext().spanId}-01`);
    }
  });

  it('gives each GraphQL operation a span between the request and the task', async () => {
    const token = await t.token('alice');
    const response = await fetch(`${t.url}/graphql`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        authorization: `Bearer ${token}`,
        traceparent: CALLER,
      },
      body: JSON.stringify({
        query: 'mutation Begin { startTask(input: { kind: "sleep", input: { ms: 0 } }) { id } }',
      }),
    });
    const id = ((await response.json()) as any).data.startTask.id as string;
    const operation = await eventually(async () =>
      spans().find((s) => s.name === 'mutation Begin'),
    );
    expect(operation.attributes).toMatchObject({
      'graphql.operation.type': 'mutation',
      'graphql.operation.name': 'Begin',
    });
    const request = spans().find(
      (s) => s.spanContext().spanId === operation.parentSpanContext?.spanId,
    );
    expect(request?.name).toBe('POST /graphql');
    expect(request?.parentSpanContext?.spanId).toBe(SPAN);
    const operationSpan = operation.spanContext().spanId;
    expect(await storedTraceParent(t, id)).toBe(`00-${TRACE}-${operationSpan}-01`);
    const attempt = await spanOf('taskhandle.attempt', id);
    expect(attempt.parentSpanContext?.spanId).toBe(operationSpan);
  });

  it('marks a failed attempt and a refused webhook attempt as errors; a re-run belongs to the request that re-ran it', async () => {
    const refusing = await startReceiver(() => 500);
    try {
      const token = await t.token('alice');
      const id = await startJob(t, token, {
        kind: 'sleep',
        input: { ms: 0, fail: 'no luck' },
        webhook: { url: refusing.url },
      });
      const attempt = await spanOf('taskhandle.attempt', id);
      expect(attempt.attributes['taskhandle.task.outcome']).toBe('failed');
      expect(attempt.status.code).toBe(SpanStatusCode.ERROR);
      const webhook = await spanOf('taskhandle.webhook', id);
      expect(webhook.attributes).toMatchObject({
        'http.response.status_code': 500,
        'taskhandle.delivery.outcome': 'retry',
      });
      expect(webhook.status.code).toBe(SpanStatusCode.ERROR);

      // Run again under another trace: the new task belongs to the request that re-ran it.
      const other = '5bf92f3577b34da6a3ce929d0e0e4736';
      const retried = await fetch(`${t.url}/v1/jobs/${id}/retry`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, traceparent: `00-${other}-${SPAN}-01` },
      });
      expect(retried.status).toBe(202);
      const again = ((await retried.json()) as { taskId: string }).taskId;
      const rerun = await eventually(async () =>
        spans().find((s) => s.name === 'POST /v1/jobs/{id}/retry'),
      );
      expect(rerun.spanContext().traceId).toBe(other);
      expect(await storedTraceParent(t, again)).toBe(
        `00-${other}-${rerun.spanContext().spanId}-01`,
      );
    } finally {
      await refusing.close();
    }
  });
});
