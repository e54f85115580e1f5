import { setMaxListeners } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { WebhookConfig } from '../config/config.js';
import type { Database } from '../db/types.js';
import { coerceError } from '../errors.js';
import type { TaskEvents } from '../tasks/events/hub.js';
import type { TaskObserver } from '../tasks/observer.js';
import {
  type ClaimedDelivery,
  claimDeliveries,
  finishDelivered,
  finishDelivery,
  releaseDeliveries,
} from '../tasks/webhooks/deliveries.js';
import { type Agents, keepAliveAgents } from './attempt.js';
import type { BodyFormat } from './body.js';
import { type SendOptions, sendAttempt } from './send.js';
import { readTraceParents } from './trace.js';

export interface DelivererOptions {
  db: Kysely<Database>;
  events: TaskEvents;
  log: Logger;
  /** Identifies this process's leases. */
  workerId: string;
  config: WebhookConfig;
  /** Bodies for webhooks of another shape than Standard Webhooks events (A2A configs). */
  formats?: Partial<Record<'a2a', BodyFormat>>;
  /** Told of each attempt's outcome (metrics). */
  observer?: TaskObserver;
}

/** The longest a delivered outcome waits for others to share its statement. */
const RECORD_WINDOW_MS = 2;

/** The claim outlives the attempt's timeout by this much (DESIGN §11). */
const LEASE_MARGIN_MS = 5_000;

/**
 * Delivers the outbox (DESIGN §11) from this process: claims due deliveries, at most
 * `concurrency` attempts at once, woken by NOTIFY, by its own retries falling due, and by a
 * backstop poll; signs each body (Standard Webhooks), posts it, and records the outcome under
 * the lease.
 */
export class Deliverer {
  private readonly inFlight = new Map<string, { claim: ClaimedDelivery; done: Promise<void> }>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly stopping = new AbortController();
  private claiming = false;
  /** The claim under way, which a stop waits for: what it claims then is given back. */
  private pumping: Promise<void> | undefined;
  private again = false;
  /**
   * The last claim found fewer due deliveries than it had slots for, and nothing has said since
   * that more may be due: a slot freed by a delivered attempt need not claim again.
   */
  private satisfied = false;
  private closed = false;
  private unsubscribe: Array<() => void> = [];
  private readonly leaseMs: number;
  /** Connections kept open between attempts: a receiver's next delivery skips the handshake. */
  private readonly agents: Agents;
  /** What every attempt is sent with, made once. */
  private readonly sendOptions: SendOptions;

  constructor(private readonly options: DelivererOptions) {
    this.leaseMs = options.config.timeoutMs + LEASE_MARGIN_MS;
    this.agents = keepAliveAgents(options.config.concurrency);
    this.sendOptions = { ...options, agents: this.agents, signal: this.stopping.signal };
    // Every attempt in flight listens for the stop.
    setMaxListeners(options.config.concurrency + 10, this.stopping.signal);
  }

  start(): void {
    const { events, config } = this.options;
    this.unsubscribe = [
      events.onDeliveryDue(() => this.wake()),
      events.onReconnect(() => this.wake()),
    ];
    const backstop = setInterval(() => this.wake(), config.pollIntervalMs);
    backstop.unref();
    this.timers.add(backstop);
    this.wake();
  }

  /** Attempts in progress in this process (tests, metrics). */
  get active(): number {
    return this.inFlight.size;
  }

  /** @param slot woken only because an attempt ended (not by news that more may be due) */
  private wake(slot = false): void {
    if (this.closed) return;
    if (slot && this.satisfied) return;
    if (!slot) this.satisfied = false;
    if (this.claiming) {
      this.again = true;
      return;
    }
    // After this turn of the event loop: slots freed together are claimed by one statement.
    this.claiming = true;
    setImmediate(() => {
      this.pumping = this.pump();
    });
  }

  private async pump(): Promise<void> {
    try {
      for (;;) {
        if (this.delivered.length > 0) break; // their record claims for the slots (flushWaiting)
        this.again = false;
        const free = this.options.config.concurrency - this.inFlight.size;
        if (free <= 0 || this.closed) break;
        const claims = await claimDeliveries(
          this.options.db,
          this.options.workerId,
          free,
          this.leaseMs,
        );
        await this.traceParents(claims);
        if (this.closed) {
          await releaseDeliveries(this.options.db, this.options.workerId, claims);
          break;
        }
        for (const claim of claims) this.run(claim);
        this.satisfied = claims.length < free;
        if (claims.length < free && !this.again) break;
      }
    } catch (err) {
      this.options.log.warn({ err: coerceError(err) }, 'claiming webhook deliveries failed');
    } finally {
      this.claiming = false;
      this.flushWaiting();
    }
  }

  /** Reads the claims' trace contexts; without them the attempts go in traces of their own. */
  private traceParents(claims: ClaimedDelivery[]): Promise<void> {
    return readTraceParents(this.options.db, claims).catch((err: unknown) =>
      this.options.log.warn({ err: coerceError(err) }, 'reading trace contexts failed'),
    );
  }

  private run(claim: ClaimedDelivery): void {
    const done = this.deliver(claim).finally(() => {
      this.inFlight.delete(claim.id);
      this.wake(true);
    });
    this.inFlight.set(claim.id, { claim, done });
  }

  private async deliver(claim: ClaimedDelivery): Promise<void> {
    const { log, db, workerId } = this.options;
    const outcome = await sendAttempt(claim, this.sendOptions);
    if (!outcome) return; // stopped mid-attempt: the stop gives the delivery back uncounted
    // Any other outcome than delivered changes what is due (a failed delivery lets its webhook's
    // next go), which no claim has seen yet.
    if (outcome.kind !== 'delivered') this.satisfied = false;
    this.options.observer?.webhookDelivery(outcome.kind);
    try {
      const held =
        outcome.kind === 'delivered'
          ? await this.recordDelivered(claim, outcome.statusCode)
          : await finishDelivery(db, workerId, claim, outcome);
      if (!held) log.warn({ deliveryId: claim.id }, 'webhook delivery lease lost; outcome dropped');
      else if (outcome.kind === 'retry') this.wakeIn(outcome.delayMs);
    } catch (err) {
      // The lease lapses and another attempt follows: at least once.
      log.warn(
        { err: coerceError(err), deliveryId: claim.id },
        'recording a webhook attempt failed',
      );
    }
  }

  private delivered: Array<{
    claim: ClaimedDelivery;
    statusCode: number;
    settle: (held: boolean) => void;
    fail: (err: unknown) => void;
  }> = [];

  private flushTimer: NodeJS.Timeout | NodeJS.Immediate | undefined;
  /** The flush scheduled is the one at the end of this turn of the event loop. */
  private flushSoon = false;

  /**
   * Queues a delivered outcome. The queue is recorded at the end of the turn in which every
   * attempt in flight has an outcome queued, or RECORD_WINDOW_MS after its first, whichever
   * comes first: attempts that end close together share one statement and one commit.
   */
  private recordDelivered(claim: ClaimedDelivery, statusCode: number): Promise<boolean> {
    return new Promise((settle, fail) => {
      this.delivered.push({ claim, statusCode, settle, fail });
      // An attempt stays in flight until its outcome is recorded, this one included.
      const waitingForNone = this.delivered.length >= this.inFlight.size || this.closed;
      if (this.flushTimer && (this.flushSoon || !waitingForNone)) return;
      if (this.flushTimer) clearTimeout(this.flushTimer as NodeJS.Timeout);
      this.flushSoon = waitingForNone;
      this.flushTimer = waitingForNone
        ? setImmediate(() => void this.flushDelivered())
        : setTimeout(() => void this.flushDelivered(), RECORD_WINDOW_MS);
    });
  }

  /**
   * Records the queued delivered outcomes and claims for the slots they free, in one statement.
   * One statement at a time: while a claim is under way they wait, and others join them.
   */
  private async flushDelivered(): Promise<void> {
    this.flushTimer = undefined;
    if (this.claiming && !this.closed) return; // flushWaiting, once the claim ends
    const batch = this.delivered;
    this.delivered = [];
    const { db, workerId, config } = this.options;
    const claimHere = !this.claiming && !this.closed;
    if (claimHere) this.claiming = true;
    // The batch's attempts are still counted in flight; their slots are what this claims for.
    const limit = claimHere
      ? Math.max(0, config.concurrency - this.inFlight.size + batch.length)
      : 0;
    try {
      const { held, claimed } = await finishDelivered(db, workerId, batch, {
        limit,
        leaseMs: this.leaseMs,
      });
      if (!this.closed) {
        await this.traceParents(claimed);
        for (const next of claimed) this.run(next);
      }
      // Stopped meanwhile: give them back for another process (or lapse with their lease).
      else await releaseDeliveries(db, workerId, claimed).catch(() => {});
      // Without a claim here, the next versions of the webhooks just delivered may now be due
      // and no claim has looked since: the slots these attempts free must claim.
      this.satisfied = claimHere && claimed.length < limit;
      for (const item of batch) item.settle(held.has(item.claim.id));
    } catch (err) {
      this.satisfied = false;
      for (const item of batch) item.fail(err);
    } finally {
      if (claimHere) {
        this.claiming = false;
        if (this.again && this.delivered.length === 0) {
          this.again = false;
          this.wake();
        }
        this.flushWaiting();
      }
    }
  }

  /** Records, at once, outcomes that waited for a claim to end. */
  private flushWaiting(): void {
    if (this.delivered.length === 0 || this.flushTimer) return;
    this.flushSoon = true;
    this.flushTimer = setImmediate(() => void this.flushDelivered());
  }

  private wakeIn(ms: number): void {
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      this.wake();
    }, ms);
    timer.unref();
    this.timers.add(timer);
  }

  /**
   * Stops claiming, lets attempts in flight finish within `graceMs`, then aborts the rest and
   * gives their deliveries back uncounted, for another process to send at once.
   */
  async stop(graceMs: number): Promise<void> {
    this.closed = true;
    for (const off of this.unsubscribe) off();
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    await this.pumping;
    const all = () => Promise.all([...this.inFlight.values()].map((f) => f.done));
    const grace = new AbortController();
    await Promise.race([
      all(),
      sleep(graceMs, undefined, { signal: grace.signal }).catch(() => {}),
    ]);
    grace.abort();
    const left = [...this.inFlight.values()].map((f) => f.claim);
    this.stopping.abort();
    await all();
    this.agents.http.destroy();
    this.agents.https.destroy();
    try {
      const released = await releaseDeliveries(this.options.db, this.options.workerId, left);
      if (released > 0) this.options.log.info({ released }, 'webhook deliveries released');
    } catch (err) {
      this.options.log.warn({ err: coerceError(err) }, 'releasing webhook deliveries failed');
    }
  }
}
