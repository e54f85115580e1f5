import { INVALID_SPAN_CONTEXT, propagation } from '@opentelemetry/api';
import type { Executor } from '../db/types.js';
import type { ClaimedDelivery, DeliveryOutcome } from '../tasks/webhooks/deliveries.js';
import {
  contextOf,
  failed,
  type Span,
  SpanKind,
  trace,
  tracer,
  tracingOn,
} from '../tracing/tracer.js';
import type { AttemptResult } from './attempt.js';

/**
 * Webhook attempts as spans (DESIGN §13): each a CLIENT span in the trace of the request that
 * started the task, whichever process sends it, and the receiver is sent its `traceparent`.
 */

/**
 * Reads the stored trace context of the claimed deliveries' tasks into them; with tracing off,
 * reads nothing.
 */
export async function readTraceParents(
  db: Executor,
  claims: readonly ClaimedDelivery[],
): Promise<void> {
  if (claims.length === 0 || !tracingOn()) return;
  const ids = [...new Set(claims.map((c) => c.task_id))];
  const rows = await db
    .selectFrom('tasks')
    .select(['id', 'trace_parent'])
    .where('id', 'in', ids)
    .where('trace_parent', 'is not', null)
    .execute();
  const byTask = new Map(rows.map((row) => [row.id, row.trace_parent]));
  for (const claim of claims) claim.trace_parent = byTask.get(claim.task_id) ?? null;
}

/** What an attempt records with tracing off: nothing (no URL parsed, no attributes built). */
const NOT_RECORDING = trace.wrapSpanContext(INVALID_SPAN_CONTEXT);

/** Starts the span of one attempt and adds its trace context to the request's headers. */
export function startAttemptSpan(claim: ClaimedDelivery, headers: Record<string, string>): Span {
  if (!tracingOn()) return NOT_RECORDING;
  const parent = contextOf(claim.trace_parent);
  let address: { host: string; port: number } | undefined;
  try {
    const url = new URL(claim.url);
    address = {
      host: url.hostname,
      port: Number(url.port) || (url.protocol === 'https:' ? 443 : 80),
    };
  } catch {}
  const span = tracer.startSpan(
    'taskhandle.webhook',
    {
      kind: SpanKind.CLIENT,
      attributes: {
        'http.request.method': 'POST',
        ...(address ? { 'server.address': address.host, 'server.port': address.port } : {}),
        'taskhandle.task.id': claim.task_id,
        'taskhandle.webhook.id': claim.webhook_id,
        'taskhandle.delivery.id': claim.id,
        'taskhandle.delivery.version': claim.version,
        'taskhandle.delivery.attempt': claim.attempts,
      },
    },
    parent,
  );
  if (span.isRecording()) propagation.inject(trace.setSpan(parent, span), headers);
  return span;
}

/** Ends an attempt's span with its answer and what it means for the delivery. */
export function endAttemptSpan(
  span: Span,
  result: AttemptResult,
  outcome: DeliveryOutcome | null,
): void {
  if (!span.isRecording()) return;
  if (result.statusCode !== null) span.setAttribute('http.response.status_code', result.statusCode);
  if (outcome) span.setAttribute('taskhandle.delivery.outcome', outcome.kind);
  if ('error' in result) failed(span, new Error(result.error));
  else if (outcome?.kind !== 'delivered') failed(span, undefined, `answered ${result.statusCode}`);
  span.end();
}
