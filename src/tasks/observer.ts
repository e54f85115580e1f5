/**
 * What the domain tells whoever measures it (src/metrics/metrics.ts exports it to Prometheus).
 * The domain calls these and knows nothing of how they are counted; every method must be
 * cheap and must never throw.
 */
export interface TaskObserver {
  /** A claim statement took `seconds` and returned `rows`. */
  claimed(
    rows: readonly { kind: string; created_at: Date; attempt: number }[],
    seconds: number,
  ): void;
  /** A handler ended after `seconds`: its outcome, or the cause that aborted it. */
  ran(kind: string, outcome: RunOutcome, seconds: number): void;
  /** This process lost a task's lease (another worker may run it now). */
  leaseLost(): void;
  /** The listening connection came back after it was lost. */
  listenReconnected(): void;
  /** One purge batch deleted `rows` expired tasks. */
  purgeBatch(rows: number): void;
  /** One webhook delivery attempt ended. */
  webhookDelivery(outcome: WebhookOutcome): void;
}

export type RunOutcome =
  | 'completed'
  | 'failed'
  | 'cancelled'
  | 'expired'
  | 'timeout'
  | 'lease-lost'
  | 'shutdown'
  | 'suspended';

/**
 * `delivered` (2xx), `retry` (no 2xx answer, tried again later), `failed` (given up), `gone`
 * (410: the webhook is disabled).
 */
export type WebhookOutcome = 'delivered' | 'retry' | 'failed' | 'gone';
