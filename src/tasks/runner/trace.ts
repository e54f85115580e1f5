import type { TaskRow } from '../../db/types.js';
import {
  context,
  contextOf,
  type Span,
  SpanKind,
  trace,
  tracer,
  tracingOn,
  UNTRACED_SPAN,
} from '../../tracing/tracer.js';

/**
 * The runner's spans (DESIGN §13), each a child of the trace of the request that started the
 * task (its stored `traceparent`), whichever process runs it and however many crashed before.
 */

/** A claim that took `row`: from when the claim was sent (epoch ms) to now. */
export function recordClaim(row: TaskRow, workerId: string, sentAt: number): void {
  if (!row.trace_parent) return;
  tracer
    .startSpan(
      'taskhandle.claim',
      {
        kind: SpanKind.CONSUMER,
        startTime: sentAt,
        attributes: {
          'taskhandle.task.id': row.id,
          'taskhandle.task.kind': row.kind,
          'taskhandle.task.attempt': row.attempt,
          'taskhandle.worker.id': workerId,
        },
      },
      contextOf(row.trace_parent),
    )
    .end();
}

/** The span of one handler attempt, and how to run the handler with it active. */
export interface AttemptSpan {
  span: Span;
  /** Runs `fn` with the span active, so that what it calls (fetch, pg) nests under it. */
  run<T>(fn: () => T): T;
}

/** Tracing off: one span that records nothing, shared by every attempt (see `attemptSpan`). */
const UNTRACED: AttemptSpan = {
  span: UNTRACED_SPAN,
  run: (fn) => fn(),
};

/**
 * The span of one handler attempt; the handler runs with it active (its fetch and pg nest).
 * With tracing off, nothing is made: the API's no-op span and context would cost each attempt
 * a few objects for nothing.
 */
export function attemptSpan(row: TaskRow, workerId: string): AttemptSpan {
  if (!tracingOn()) return UNTRACED;
  const parent = contextOf(row.trace_parent);
  const span = tracer.startSpan(
    'taskhandle.attempt',
    {
      kind: SpanKind.INTERNAL,
      attributes: {
        'taskhandle.task.id': row.id,
        'taskhandle.task.kind': row.kind,
        'taskhandle.task.attempt': row.attempt,
        'taskhandle.worker.id': workerId,
      },
    },
    parent,
  );
  const active = trace.setSpan(parent, span);
  return { span, run: (fn) => context.with(active, fn) };
}
