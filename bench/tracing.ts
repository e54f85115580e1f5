import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { propagation } from '@opentelemetry/api';
import type { TaskRow } from '../src/db/types.js';
import { traceRequest } from '../src/http/trace.js';
import { attemptSpan, recordClaim } from '../src/tasks/runner/trace.js';
import type { ClaimedDelivery } from '../src/tasks/webhooks/deliveries.js';
import { contextOf, currentTraceParent, tracingOn } from '../src/tracing/tracer.js';
import { endAttemptSpan, startAttemptSpan } from '../src/webhook-delivery/trace.js';
import {
  best,
  CONCURRENCY,
  DURATION_MS,
  fmt,
  out,
  ratio,
  server,
  targets,
  truncate,
  verdict,
  WARMUP_MS,
} from './common.js';
import { type LoadResult, load } from './load.js';

/**
 * DESIGN §13: what tracing costs. Two ROLE=all processes side by side, one without any OTEL_*
 * variable (the SDK never loads) and one exporting every span over OTLP (http/protobuf, the
 * default) to a loopback receiver; REST starts of `noop` tasks at 16 concurrent clients, which
 * the same process claims and runs, so each task costs the request's, the claim's and the
 * attempt's spans and its pg statements'; in the order off, on, on, off, each keeping its
 * better run. Then, in this process with no SDK, the time the no-op API calls on a task's path
 * take: what "off" adds to a request.
 */

/** A stand-in collector: reads each export and answers 200. */
async function sink(): Promise<{
  url: string;
  exports: () => number;
  bytes: () => number;
  close(): void;
}> {
  let exports = 0;
  let bytes = 0;
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    req.on('data', (chunk: Buffer) => (bytes += chunk.length));
    req.on('end', () => {
      exports++;
      res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    exports: () => exports,
    bytes: () => bytes,
    close: () => {
      server.close();
      server.closeAllConnections();
    },
  };
}

/** Nanoseconds per task of the tracing calls on its path while no SDK is registered. */
function offCostNs(): number {
  if (tracingOn()) throw new Error('the off figure needs a process without an SDK');
  const req = {
    method: 'POST',
    url: '/v1/jobs',
    headers: {
      'content-type': 'application/json',
      traceparent: `00-${'a'.repeat(32)}-${'b'.repeat(16)}-01`,
    },
  } as unknown as IncomingMessage;
  const res = {} as ServerResponse;
  const row = { id: 'x', kind: 'noop', attempt: 1, trace_parent: null } as unknown as TaskRow;
  const claim = {
    id: 'd',
    task_id: 'x',
    webhook_id: 'w',
    version: 1,
    attempts: 1,
    url: 'http://127.0.0.1:9/',
  } as ClaimedDelivery;
  const served = () => Promise.resolve();
  const once = () => {
    void traceRequest(req, res, served); // the request
    currentTraceParent(); // the start stores it
    recordClaim(row, 'w', 0); // the claim
    attemptSpan(row, 'w').span.end(); // the attempt
    const span = startAttemptSpan(claim, {}); // one webhook attempt
    endAttemptSpan(span, { statusCode: 200 }, { kind: 'delivered', statusCode: 200 });
    propagation.extract(contextOf(null), {});
  };
  for (let i = 0; i < 100_000; i++) once();
  const n = 1_000_000;
  const started = process.hrtime.bigint();
  for (let i = 0; i < n; i++) once();
  return Number(process.hrtime.bigint() - started) / n;
}

export async function tracing(token: string): Promise<void> {
  out('## Tracing: off and on (DESIGN §13)');
  out();
  const collector = await sink();
  const off = await server('tracing-off', { ROLE: 'all' });
  const on = await server('tracing-on', {
    ROLE: 'all',
    OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
    OTEL_SERVICE_NAME: 'taskhandle-bench',
    // Every span is exported, none dropped for a full queue: the whole cost.
    OTEL_BSP_MAX_QUEUE_SIZE: '200000',
  });
  try {
    const body = JSON.stringify({ kind: 'noop', input: {} });
    const start = (url: string) => () =>
      load({
        url: `${url}/v1/jobs`,
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
        body,
        concurrency: CONCURRENCY,
        warmupMs: WARMUP_MS,
        durationMs: DURATION_MS,
        check: (status) => status === 202,
      });
    // off, on, on, off: each takes the first and the second place once (on 2 shared cores the
    // second of a pair ran faster either way); each keeps its better run.
    const results = new Map<string, LoadResult>();
    for (const name of ['off', 'on', 'on', 'off'] as const) {
      await truncate();
      const result = await start(name === 'off' ? off.url : on.url)();
      console.log(`  ${name}: ${fmt(result.perSecond)}/s p50 ${fmt(result.p50Ms, 2)} ms`);
      const previous = results.get(name);
      results.set(name, previous ? best(previous, result) : result);
    }
    const offResult = results.get('off')!;
    const onResult = results.get('on')!;
    out('| tracing | starts/s (each task also claimed and run) | p50 ms | p99 ms | × off |');
    out('| --- | ---: | ---: | ---: | ---: |');
    for (const [label, result] of [
      ['off (no OTEL_* variable: no SDK loaded)', offResult],
      ['on (every span over OTLP http/protobuf to a loopback receiver)', onResult],
    ] as const)
      out(
        `| ${label} | ${fmt(result.perSecond)} | ${fmt(result.p50Ms, 2)} | ${fmt(result.p99Ms, 2)} | ${ratio(result.perSecond, offResult.perSecond)} |`,
      );
    out();
    const ns = offCostNs();
    const share = ns / 1e6 / offResult.p50Ms;
    out(
      `Off, the API's no-op calls on one task's path (request span, stored traceparent, claim, attempt, one webhook attempt) take ${fmt(ns)} ns in all, measured in this process without an SDK: ${(share * 100).toFixed(3)} % of the off p50. The receiver took ${fmt(collector.exports())} exports, ${fmt(collector.bytes() / 2 ** 20, 1)} MiB.`,
    );
    out();
    targets.push(
      `| tracing off costs nothing measurable (no-op calls < 0.1 % of a start's p50) | ${fmt(ns)} ns a task, ${(share * 100).toFixed(3)} % | ${verdict(share < 0.001)} |`,
      `| tracing on: what it costs (no target) | ${ratio(onResult.perSecond, offResult.perSecond)} of off's starts/s | — |`,
    );
  } finally {
    await Promise.all([off.stop(), on.stop()]);
    collector.close();
  }
}
