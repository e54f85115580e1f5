import pino from 'pino';
import { bodyOf, headersFor } from '../src/webhook-delivery/body.js';

/**
 * `npx tsx bench/delivery-parts.ts`: the CPU of the parts of a webhook delivery that a bare
 * POST does not have and that need no database, each alone in a loop: the body (the snapshot
 * made a task, its report, JSON), the signed headers (Standard Webhooks HMAC), and the attempt's
 * log line (pino to a file, asynchronously, as a server writes it). Not part of `npm run bench`:
 * a diagnosis for the deliveries row, whose ratio is the deliverer's CPU a delivery against a
 * bare client's.
 */

const ROUNDS = 50_000;
const WARMUP = 5_000;

const at = new Date().toISOString();
const snapshot = {
  id: crypto.randomUUID(),
  owner: 'alice',
  kind: 'noop',
  status: 'completed',
  status_message: null,
  progress: 1,
  result: null,
  error: null,
  input_request: null,
  input_requests: null,
  version: 2,
  ttl_ms: 3_600_000,
  expires_at: at,
  poll_interval_ms: 1_000,
  attempt: 1,
  max_attempts: 3,
  timeout_ms: 60_000,
  created_at: at,
  last_updated_at: at,
  priority: 0,
  concurrency_key: null,
  concurrency_limit: null,
  retry_initial_delay_ms: 1_000,
  retry_factor: 2,
  retry_max_delay_ms: 60_000,
  last_error: null,
  hold: null,
  labels: {},
  retry_of: null,
  trace_parent: null,
  schedule_key: null,
  parent_id: null,
};
const delivery = {
  id: crypto.randomUUID(),
  snapshot,
  secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
  format: 'standard' as const,
  token: null,
  auth_scheme: null,
  auth_credentials: null,
};
const log = pino(
  { level: 'info' },
  pino.destination({ dest: '/dev/null', sync: false, minLength: 4_096 }),
);

/** µs of CPU (user + system) a call of `part`, after a warm-up. */
function cpuUs(part: () => unknown): number {
  for (let i = 0; i < WARMUP; i++) part();
  const before = process.cpuUsage();
  for (let i = 0; i < ROUNDS; i++) part();
  const used = process.cpuUsage(before);
  return (used.user + used.system) / ROUNDS;
}

const body = bodyOf(delivery);
const parts: Array<[string, () => unknown]> = [
  ['the body: snapshot → task → report → JSON', () => bodyOf(delivery)],
  ['the signed headers', () => headersFor(delivery, body)],
  [
    'the log line',
    () =>
      log.info(
        {
          deliveryId: delivery.id,
          taskId: snapshot.id,
          webhookId: delivery.id,
          version: 2,
          attempt: 0,
          statusCode: 204,
          outcome: 'delivered',
          durationMs: 1,
        },
        'webhook attempt',
      ),
  ],
];
let total = 0;
for (const [name, part] of parts) {
  const us = cpuUs(part);
  total += us;
  console.log(`${name}: ${us.toFixed(1)} µs`);
}
console.log(`together: ${total.toFixed(1)} µs a delivery`);
log.flush();
