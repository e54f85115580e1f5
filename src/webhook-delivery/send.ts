import type { Logger } from 'pino';
import type { WebhookConfig } from '../config/config.js';
import type { ClaimedDelivery, DeliveryOutcome } from '../tasks/webhooks/deliveries.js';
import { type Agents, attempt } from './attempt.js';
import { type BodyFormat, bodyOf, headersFor } from './body.js';
import { outcomeOf } from './outcome.js';
import { endAttemptSpan, startAttemptSpan } from './trace.js';

export interface SendOptions {
  config: WebhookConfig;
  log: Logger;
  formats?: Partial<Record<'a2a', BodyFormat>>;
  agents: Agents;
  /** The process is stopping: the attempt is aborted. */
  signal: AbortSignal;
}

/**
 * One attempt of a claimed delivery: signed, posted, traced and logged.
 * @returns what to record, or null when a stop aborted it (the stop gives it back uncounted)
 */
export async function sendAttempt(
  claim: ClaimedDelivery,
  { config, log, formats, agents, signal }: SendOptions,
): Promise<DeliveryOutcome | null> {
  const startedAt = performance.now();
  const body = bodyOf(claim, formats);
  const headers = headersFor(claim, body);
  const span = startAttemptSpan(claim, headers);
  const result = await attempt({
    url: claim.url,
    headers,
    body,
    timeoutMs: config.timeoutMs,
    allowPrivate: config.allowPrivate,
    signal,
    agents,
  });
  const durationMs = Math.round(performance.now() - startedAt);
  if (signal.aborted && result.statusCode === null) {
    endAttemptSpan(span, result, null);
    return null;
  }
  const outcome = outcomeOf(result, claim.attempts, config.retryScheduleMs);
  endAttemptSpan(span, result, outcome);
  log.info(
    {
      deliveryId: claim.id,
      taskId: claim.task_id,
      webhookId: claim.webhook_id,
      version: claim.version,
      attempt: claim.attempts,
      statusCode: result.statusCode,
      ...('error' in result ? { error: result.error } : {}),
      outcome: outcome.kind,
      durationMs,
    },
    'webhook attempt',
  );
  return outcome;
}
