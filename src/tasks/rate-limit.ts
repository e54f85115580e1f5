import { ServiceError } from '../errors.js';

/**
 * A token bucket per principal (DESIGN §12, `RATE_LIMIT_RPS` / `RATE_LIMIT_BURST`): each
 * task operation takes a token; a bucket holds at most `burst` and regains `rps` a second.
 * An empty bucket refuses with RATE_LIMITED and `details.retryAfterMs`, the wait until the
 * next token. Other principals are unaffected.
 *
 * The buckets live in this process: with N API processes behind a balancer a principal gets
 * up to N times the rate. Put a shared limiter in front for a cluster-wide one.
 */

export interface RatePolicy {
  /** Tokens regained a second; 0 turns the limit off. */
  rateLimitRps: number;
  /** The bucket's size. */
  rateLimitBurst: number;
}

interface Bucket {
  tokens: number;
  /** When `tokens` was counted, epoch ms. */
  at: number;
}

/** Buckets kept before the full ones (indistinguishable from absent ones) are dropped. */
const SWEEP_AT = 10_000;

export class RateLimiter {
  private readonly buckets = new Map<string, Bucket>();
  private sweepAt = SWEEP_AT;

  constructor(
    private readonly policy: RatePolicy = { rateLimitRps: 0, rateLimitBurst: 0 },
    private readonly now: () => number = Date.now,
  ) {}

  /** Takes one of `principal`'s tokens. @throws ServiceError RATE_LIMITED when there is none */
  take(principal: string): void {
    const { rateLimitRps: rps } = this.policy;
    if (rps <= 0) return;
    const burst = Math.max(1, this.policy.rateLimitBurst);
    const now = this.now();
    const bucket = this.buckets.get(principal) ?? { tokens: burst, at: now };
    bucket.tokens = Math.min(burst, bucket.tokens + ((now - bucket.at) / 1_000) * rps);
    bucket.at = now;
    if (bucket.tokens < 1) {
      this.buckets.set(principal, bucket);
      const retryAfterMs = Math.ceil(((1 - bucket.tokens) / rps) * 1_000);
      throw new ServiceError(
        'RATE_LIMITED',
        `Too many requests: RATE_LIMIT_RPS is ${rps} a second (burst ${burst}); retry in ${retryAfterMs} ms.`,
        { retryAfterMs },
      );
    }
    bucket.tokens -= 1;
    this.buckets.set(principal, bucket);
    if (this.buckets.size >= this.sweepAt) this.sweep(now, rps, burst);
  }

  /** Drops the buckets that have refilled: memory stays proportional to recent principals. */
  private sweep(now: number, rps: number, burst: number): void {
    for (const [principal, bucket] of this.buckets) {
      if (bucket.tokens + ((now - bucket.at) / 1_000) * rps >= burst)
        this.buckets.delete(principal);
    }
    this.sweepAt = Math.max(SWEEP_AT, this.buckets.size * 2);
  }
}
