import type { TaskRow } from '../../db/types.js';
import { contextOf, type Span, SpanKind, tracer } from '../../tracing/tracer.js';

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

/** The span of one handler attempt; the handler runs with it active (its fetch and pg nest). */
export function attemptSpan(
  row: TaskRow,
  workerId: string,
): { span: Span; parent: ReturnType<typeof contextOf> } {
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
  return { span, parent };
}
