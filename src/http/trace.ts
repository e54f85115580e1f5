import type { IncomingMessage, ServerResponse } from 'node:http';
import { propagation, ROOT_CONTEXT } from '@opentelemetry/api';
import { context, SpanKind, SpanStatusCode, trace, tracer } from '../tracing/tracer.js';
import { routeOf } from './route-name.js';

/**
 * Runs `serve` inside a SERVER span for the request (DESIGN §13), the child of the caller's
 * trace when its headers carry one (`traceparent`, or whatever `OTEL_PROPAGATORS` names). The
 * span is named `METHOD route` (the metrics' route, ids as `{id}`) once the answer is sent.
 * Tracing off: `serve` runs as it is.
 */
export function traceRequest(
  req: IncomingMessage,
  res: ServerResponse,
  serve: () => Promise<void>,
): Promise<void> {
  const parent = propagation.extract(ROOT_CONTEXT, req.headers);
  const method = req.method ?? 'GET';
  const path = (req.url ?? '/').split('?')[0]!;
  const span = tracer.startSpan(
    method,
    {
      kind: SpanKind.SERVER,
      attributes: { 'http.request.method': method, 'url.path': path, 'url.scheme': 'http' },
    },
    parent,
  );
  if (!span.isRecording()) return serve();
  res.once('close', () => {
    const status = res.statusCode;
    const route = routeOf(req.url, status);
    span.updateName(`${method} ${route}`);
    span.setAttributes({ 'http.route': route, 'http.response.status_code': status });
    if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
    else if (!res.writableFinished)
      span.setStatus({ code: SpanStatusCode.ERROR, message: 'aborted' });
    span.end();
  });
  return context.with(trace.setSpan(parent, span), serve);
}
