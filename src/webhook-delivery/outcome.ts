import type { DeliveryOutcome } from '../tasks/webhooks/deliveries.js';
import type { AttemptResult } from './attempt.js';

/**
 * What an attempt's answer means for its delivery (DESIGN §11): a 2xx delivers it, a 410
 * disables its webhook, and anything else is retried after the schedule's next delay (±10 %
 * jitter, so webhooks that failed together do not retry together) until it runs out.
 * @param attempts the attempts so far, this one included
 */
export function outcomeOf(
  result: AttemptResult,
  attempts: number,
  retryScheduleMs: readonly number[],
): DeliveryOutcome {
  const { statusCode } = result;
  if (statusCode !== null && statusCode >= 200 && statusCode < 300)
    return { kind: 'delivered', statusCode };
  if (statusCode === 410)
    return { kind: 'gone', statusCode, error: '410 Gone: the webhook is disabled' };
  const error =
    'error' in result
      ? result.error
      : result.statusCode >= 300 && result.statusCode < 400
        ? `redirect ${result.statusCode} (not followed)`
        : `answered ${result.statusCode}`;
  const delay = retryScheduleMs[attempts - 1];
  if (delay === undefined) return { kind: 'failed', statusCode, error };
  return { kind: 'retry', statusCode, error, delayMs: delay * (0.9 + Math.random() * 0.2) };
}
