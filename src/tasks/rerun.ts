import { randomUUID } from 'node:crypto';
import type { Executor } from '../db/types.js';
import { notFound, ServiceError } from '../errors.js';
import { currentTraceParent } from '../tracing/tracer.js';
import type { KindRegistry } from './kinds.js';
import type { Actor } from './requests.js';
import { findVisibleTask } from './sql/find.js';
import { insertTask } from './sql/insert.js';
import { type Task, toTask } from './task.js';
import { checkId } from './validation.js';

/**
 * Starts a FAILED or CANCELLED task of the actor again as a new task linked by `retryOf`
 * (same kind, input and labels, a fresh retention); the old one stays as it was.
 * @throws ServiceError TASK_NOT_RETRYABLE for a task still active, or completed
 */
export async function retryTask(
  db: Executor,
  kinds: KindRegistry,
  actor: Actor,
  id: string,
): Promise<Task> {
  const row = await findVisibleTask(db, checkId(id), actor.id);
  if (!row) throw notFound();
  if (row.status !== 'failed' && row.status !== 'cancelled')
    throw new ServiceError(
      'TASK_NOT_RETRYABLE',
      `The task is ${row.status}; only failed or cancelled tasks can be run again.`,
    );
  const kind = kinds.require(row.kind);
  const outcome = await insertTask(db, {
    id: randomUUID(),
    owner: row.owner,
    kind: kind.name,
    input: row.input,
    ttlMs: row.ttl_ms,
    pollIntervalMs: kind.pollIntervalMs,
    timeoutMs: kind.timeoutMs,
    idempotencyKey: null,
    labels: row.labels,
    retryOf: row.id,
    traceParent: currentTraceParent(),
    // A re-run starts at once, managed as the original was (DESIGN §15).
    runAt: null,
    priority: row.priority,
    concurrencyKey: row.concurrency_key,
    concurrencyLimit: row.concurrency_limit,
    retry: {
      maxAttempts: row.max_attempts,
      initialDelayMs: row.retry_initial_delay_ms,
      factor: row.retry_factor,
      maxDelayMs: row.retry_max_delay_ms,
    },
  });
  return toTask(outcome.row);
}
