import {
  type Context,
  context,
  INVALID_SPAN_CONTEXT,
  isSpanContextValid,
  ProxyTracerProvider,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  type SpanOptions,
  SpanStatusCode,
  TraceFlags,
  trace,
} from '@opentelemetry/api';

/**
 * Tracing through `@opentelemetry/api` only (DESIGN §13). With no SDK registered (tracing
 * off, the default) every call here is the API's no-op: no span is recorded, no context is
 * kept, and `currentTraceParent` is null. The SDK is started by `startTracing` (start.ts), or
 * by an embedder's own.
 */
export const tracer = trace.getTracer('taskhandle');

export type { Context, Span };
export { context, SpanKind, SpanStatusCode, trace };

/** A span that records nothing, for work done while tracing is off (see `tracingOn`). */
export const UNTRACED_SPAN: Span = trace.wrapSpanContext(INVALID_SPAN_CONTEXT);

/** The API's no-op provider: what the global provider delegates to while no SDK is registered. */
const NOOP_PROVIDER = new ProxyTracerProvider().getDelegate();

/**
 * True once an SDK is registered (tracing on). For work that only tracing needs, such as
 * reading stored trace contexts: with it off, none of it is done.
 */
export function tracingOn(): boolean {
  const provider = trace.getTracerProvider();
  return !(provider instanceof ProxyTracerProvider) || provider.getDelegate() !== NOOP_PROVIDER;
}

const TRACE_PARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/**
 * The W3C `traceparent` of the span active now (`00-<trace id>-<span id>-<flags>`), or null
 * when there is none (tracing off, or no request being traced).
 */
export function currentTraceParent(active: Context = context.active()): string | null {
  const span = trace.getSpanContext(active);
  if (!span || !isSpanContextValid(span)) return null;
  const flags = (span.traceFlags & TraceFlags.SAMPLED).toString(16).padStart(2, '0');
  return `00-${span.traceId}-${span.spanId}-${flags}`;
}

/**
 * A context whose (remote) parent is the span a stored `traceparent` names; the root context
 * for null or anything malformed, so a bad value starts a new trace instead of failing.
 */
export function contextOf(traceParent: string | null | undefined): Context {
  const match = traceParent ? TRACE_PARENT.exec(traceParent) : null;
  if (!match) return ROOT_CONTEXT;
  const spanContext = {
    traceId: match[1]!,
    spanId: match[2]!,
    traceFlags: Number.parseInt(match[3]!, 16) & TraceFlags.SAMPLED,
    isRemote: true,
  };
  return isSpanContextValid(spanContext)
    ? trace.setSpanContext(ROOT_CONTEXT, spanContext)
    : ROOT_CONTEXT;
}

/**
 * Starts a span under `parent` and runs `fn` with it active; ends it when `fn` settles,
 * recording a thrown error. `fn` may set more attributes on the span it is given.
 */
export async function inSpan<T>(
  name: string,
  options: SpanOptions,
  parent: Context,
  fn: (span: Span) => Promise<T>,
): Promise<T> {
  const span = tracer.startSpan(name, options, parent);
  try {
    return await context.with(trace.setSpan(parent, span), () => fn(span));
  } catch (err) {
    failed(span, err);
    throw err;
  } finally {
    span.end();
  }
}

/** Marks a span failed with `err` (an exception event and an error status). */
export function failed(span: Span, err: unknown, message?: string): void {
  if (!span.isRecording()) return;
  if (err instanceof Error) span.recordException(err);
  span.setStatus({
    code: SpanStatusCode.ERROR,
    message: message ?? (err instanceof Error ? err.message : String(err)),
  });
}
