import { createHmac } from 'node:crypto';
import type { TaskRow } from '../db/types.js';
import { reportOf } from '../tasks/handle.js';
import { ownerActor } from '../tasks/requests.js';
import { type Task, toTask } from '../tasks/task.js';

/**
 * What a delivery sends (DESIGN §11), made from the task as it was at the reported version
 * (the snapshot the outbox row keeps), so a retry sends the same body however far the task
 * has moved on.
 */

/** Turns the reported task into the body of a webhook of another shape (A2A's StreamResponse). */
export type BodyFormat = (task: Task) => unknown;

/** A snapshot's columns as jsonb keeps them: its timestamps are text. */
type Snapshot = { [K in keyof TaskRow]: TaskRow[K] extends Date ? string : TaskRow[K] };

/**
 * The task of a delivery's snapshot (its jsonb timestamps turned back into Dates). Each column
 * is named, not the snapshot spread into a row: a copy of jsonb's thirty-odd keys by a spread
 * is an object V8 keeps as a dictionary, slow to make and slow for toTask to read.
 */
export function snapshotTask(snapshot: Record<string, unknown>): Task {
  const s = snapshot as unknown as Snapshot;
  const createdAt = new Date(s.created_at);
  const row: TaskRow = {
    id: s.id,
    owner: s.owner,
    kind: s.kind,
    status: s.status,
    status_message: s.status_message,
    progress: s.progress,
    input: null,
    result: s.result,
    error: s.error,
    input_request: s.input_request,
    input_requests: s.input_requests,
    answers: {},
    version: s.version,
    ttl_ms: s.ttl_ms,
    expires_at: new Date(s.expires_at),
    poll_interval_ms: s.poll_interval_ms,
    idempotency_key: null,
    worker_id: null,
    lease_expires_at: null,
    attempt: s.attempt,
    max_attempts: s.max_attempts,
    timeout_ms: s.timeout_ms,
    created_at: createdAt,
    last_updated_at: new Date(s.last_updated_at),
    // The snapshot keeps no lease, so it cannot tell a task waiting for its time from one
    // running after it: the body reports no runAt (as it never has).
    run_at: createdAt,
    priority: s.priority,
    concurrency_key: s.concurrency_key,
    concurrency_limit: s.concurrency_limit,
    // A snapshot written before migration 0012 has no rate limit.
    rate_limit_key: s.rate_limit_key ?? null,
    rate_limit: s.rate_limit ?? null,
    rate_period_ms: s.rate_period_ms ?? null,
    retry_initial_delay_ms: s.retry_initial_delay_ms,
    retry_factor: s.retry_factor,
    retry_max_delay_ms: s.retry_max_delay_ms,
    last_error: s.last_error,
    hold: s.hold,
    labels: s.labels,
    retry_of: s.retry_of,
    trace_parent: s.trace_parent,
    // A snapshot written before migration 0009 has no schedule_key.
    schedule_key: s.schedule_key ?? null,
    // A snapshot taken before migration 0008 has no parent.
    parent_id: s.parent_id ?? null,
    journaled: false,
    children_count: 0,
    ran_ms: 0,
    children_waiting: 0,
    // Not part of what a delivery reports (DESIGN §17 debounce is start-time only).
    debounce_key: null,
    debounce_max_delay_ms: null,
    // A delivery is written only for a task with a webhook.
    has_webhooks: true,
  };
  // The poll interval advised at the moment of the change, as a poller would have read it then.
  return toTask(row, row.last_updated_at.getTime());
}

/** The Standard Webhooks event: the §6 handle with what the owner sees of the outcome. */
export function standardBody(task: Task): unknown {
  return {
    type: 'task.status',
    timestamp: task.lastUpdatedAt.toISOString(),
    data: reportOf(task, ownerActor(task.owner)),
    version: task.version,
  };
}

/** What a delivery's request is made of: the claimed row and its webhook. */
export interface DeliveryMessage {
  id: string;
  snapshot: Record<string, unknown>;
  secret: string;
  format: 'standard' | 'a2a';
  token: string | null;
  auth_scheme: string | null;
  auth_credentials: string | null;
}

/** The body of a delivery: a Standard Webhooks event, or the shape `formats` gives its kind. */
export function bodyOf(
  delivery: DeliveryMessage,
  formats?: Partial<Record<'a2a', BodyFormat>>,
): string {
  const task = snapshotTask(delivery.snapshot);
  const format = delivery.format === 'a2a' ? formats?.a2a : undefined;
  return JSON.stringify(format ? format(task) : standardBody(task));
}

/**
 * The Standard Webhooks signature of `body`: `v1,` and the base64 HMAC-SHA256, keyed by the
 * secret's bytes, of `{id}.{seconds}.{body}` (the body's UTF-8, as it is sent).
 */
export function signature(secret: string, id: string, seconds: number, body: string): string {
  const key = Buffer.from(secret.startsWith('whsec_') ? secret.slice(6) : secret, 'base64');
  return `v1,${createHmac('sha256', key).update(`${id}.${seconds}.`).update(body).digest('base64')}`;
}

/** The headers of an attempt: signed now (Standard Webhooks), with an A2A config's own. */
export function headersFor(delivery: DeliveryMessage, body: string): Record<string, string> {
  const seconds = Math.floor(Date.now() / 1000);
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'user-agent': 'taskhandle-webhooks',
    'webhook-id': delivery.id,
    'webhook-timestamp': String(seconds),
    'webhook-signature': signature(delivery.secret, delivery.id, seconds, body),
  };
  if (delivery.token !== null) headers['x-a2a-notification-token'] = delivery.token;
  if (delivery.auth_scheme !== null)
    headers.authorization = `${delivery.auth_scheme} ${delivery.auth_credentials ?? ''}`.trim();
  return headers;
}
