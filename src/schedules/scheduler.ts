import type { Logger } from 'pino';
import type { Executor } from '../db/types.js';
import { coerceError } from '../errors.js';
import type { TaskEvents } from '../tasks/events/hub.js';
import type { TaskService } from '../tasks/service.js';
import { type Clock, systemClock } from './clock.js';
import { fireDue } from './fire.js';
import { earliest } from './store.js';

export interface SchedulerOptions {
  db: Executor;
  tasks: TaskService;
  events: TaskEvents;
  log: Logger;
  /** @default the wall clock */
  clock?: Clock | undefined;
}

/** Schedules one transaction fires at most. */
const BATCH = 50;
/** The longest the timer sleeps without looking again (a NOTIFY lost, the clock set anew). */
const MAX_SLEEP_MS = 60_000;
/**
 * How soon to look again at an occurrence due but locked by another process: its commit
 * wakes this one sooner; this is for the process that died holding it.
 */
const LOCKED_RETRY_MS = 1_000;
/** Backoff bounds after a failed pass (the database away). */
const FAILURE_BACKOFF_MS: readonly [number, number] = [500, 30_000];

/**
 * Fires the schedules of DESIGN §17 from this process, alongside any number of others over
 * the same database. One timer, for the earliest occurrence of all schedules: when it rings,
 * one indexed statement locks what is due and each occurrence's task is started in the
 * transaction that moves its schedule on (fire.ts). A change of any schedule, here or in
 * another process, arrives by NOTIFY and the earliest is read again; nothing is polled per
 * schedule, so 10 000 schedules cost what 10 do between their occurrences.
 */
export class Scheduler {
  private readonly clock: Clock;
  private cancelTimer: (() => void) | undefined;
  private retryTimer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  /** Woken while a pass ran: another pass follows it. */
  private again = false;
  /** Only the earliest is to be read again, not what is due fired. */
  private rereadOnly = true;
  private failures = 0;
  private closed = false;
  private unsubscribe: Array<() => void> = [];

  constructor(private readonly options: SchedulerOptions) {
    this.clock = options.clock ?? systemClock;
  }

  /** Fires what is due now (here is where `missed` decides after a stop) and keeps watch. */
  start(): void {
    const { events } = this.options;
    this.unsubscribe = [
      events.onSchedulesChanged(() => this.wake(false)),
      events.onReconnect(() => this.wake(true)),
    ];
    this.wake(true);
  }

  /** Stops the timer and waits for a pass in flight, which commits or rolls back whole. */
  async stop(): Promise<void> {
    this.closed = true;
    for (const off of this.unsubscribe) off();
    this.cancelTimer?.();
    clearTimeout(this.retryTimer);
    await this.running;
  }

  /** @param fire fire what is due (else only read the earliest and set the timer) */
  private wake(fire: boolean): void {
    if (this.closed) return;
    if (fire) this.rereadOnly = false;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.pass().finally(() => {
      this.running = undefined;
      if (this.again && !this.closed) {
        this.again = false;
        this.wake(false);
      }
    });
  }

  private async pass(): Promise<void> {
    const fire = !this.rereadOnly;
    this.rereadOnly = true;
    const kinds = this.options.tasks.listKinds().map((kind) => kind.name);
    try {
      /** When the pass last looked for what is due (null: it did not). */
      let lookedAt: number | null = null;
      if (fire) {
        const context = { ...this.options, kinds };
        for (;;) {
          lookedAt = this.clock.now();
          const fired = await fireDue(context, lookedAt, BATCH);
          if (fired < BATCH || this.closed) break;
        }
      }
      const next = await earliest(this.options.db, kinds);
      this.failures = 0;
      if (this.closed) return;
      this.arm(next?.getTime() ?? null, lookedAt);
    } catch (err) {
      const [min, max] = FAILURE_BACKOFF_MS;
      const delay = Math.min(max, min * 2 ** this.failures++);
      this.options.log.warn(
        { err: coerceError(err), retryInMs: delay },
        'firing schedules failed; trying again',
      );
      this.retryLater(delay);
    }
  }

  /**
   * Sets the one timer for `next`. An occurrence that was due when the pass looked
   * (`lookedAt`) and is due still was locked by another process, which fires it: looked at
   * again in a while, unless that commit's NOTIFY comes first. One that fell due since is
   * fired at once.
   */
  private arm(next: number | null, lookedAt: number | null): void {
    this.cancelTimer?.();
    this.cancelTimer = undefined;
    clearTimeout(this.retryTimer);
    const now = this.clock.now();
    if (next !== null && next <= now) {
      if (lookedAt !== null && next <= lookedAt) this.retryLater(LOCKED_RETRY_MS);
      else this.wake(true);
      return;
    }
    const at = Math.min(next ?? Number.POSITIVE_INFINITY, now + MAX_SLEEP_MS);
    this.cancelTimer = this.clock.at(at, () => this.wake(true));
  }

  private retryLater(ms: number): void {
    clearTimeout(this.retryTimer);
    this.retryTimer = setTimeout(() => this.wake(true), ms);
    this.retryTimer.unref();
  }
}
