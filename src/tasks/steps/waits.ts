import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { Database, TaskRow } from '../../db/types.js';
import { coerceError } from '../../errors.js';
import { ChildTaskError } from '../kinds.js';
import { TaskAbortedError } from '../runner/aborted.js';
import type { Lease } from '../sql/leases.js';
import type { SignalUrls } from './signal-urls.js';
import { type Satisfied, suspendOrSatisfy, type WaitSpec } from './suspend-sql.js';
import { waitMessage } from './wait-message.js';

/** How a run ended suspended: the row as written, and its wake-up instant, if any. */
export interface Suspension {
  row: TaskRow;
  wakeAt: Date | null;
}

/** What the waits of a run need of it. */
export interface WaitParts {
  db: Kysely<Database>;
  log: Logger;
  row: TaskRow;
  lease: Lease;
  signal: AbortSignal;
  signalUrls: SignalUrls;
  /** The lease turned out lost: the run must stop. */
  lost(): void;
  /** The running time this attempt has used, its earlier runs' included. */
  ranMs(): number;
}

/** What the waits tell the run, and ask of it. */
export interface WaitHooks {
  /** A step's `fn` or a child start is in flight: no suspension now. */
  busy(): boolean;
  /** A wait on `name` (a sleep, a signal) was found satisfied with `value`. */
  satisfied(name: string, value: unknown): void;
  /** Something was journalled. */
  journaled(): void;
}

/** A wait reached and not satisfied, with the handler's promise to settle. */
interface PendingWait {
  spec: WaitSpec;
  resolve(value: unknown): void;
  reject(err: unknown): void;
}

/**
 * The waits a run reached and could not satisfy, and the decision to suspend on them (DESIGN
 * §16): a turn of the event loop after the last wait or step settled, with waits pending and
 * no step's `fn` running, one transaction (`suspendOrSatisfy`) either suspends the task on all
 * of them (a `Promise.all` over 10 000 children suspends once) or finds some satisfied by now,
 * which resolve and the handler goes on. Suspended, `suspended` settles and the handler's
 * promises are left unsettled: the runner ends the run, and the next run starts from the top.
 */
export class Waits {
  readonly suspended: Promise<Suspension>;
  private resolveSuspended!: (value: Suspension) => void;
  private pending: PendingWait[] = [];
  private deciding = false;
  private queued = false;
  private ended = false;

  constructor(
    private readonly parts: WaitParts,
    private readonly hooks: WaitHooks,
  ) {
    this.suspended = new Promise((resolve) => {
      this.resolveSuspended = resolve;
    });
    // A cancel, expiry, timeout or lost lease before the run is suspended rejects what the
    // handler waits for, as it aborts a step's `fn`: the handler ends, and its slot with it.
    parts.signal.addEventListener(
      'abort',
      () => {
        const waits = this.pending;
        this.pending = [];
        for (const wait of waits) wait.reject(parts.signal.reason);
      },
      { once: true },
    );
  }

  /** The handler is done: nothing more is suspended. */
  end(): void {
    this.ended = true;
  }

  /** A wait the handler reached: settles when satisfied in this run, never when suspended. */
  wait(spec: WaitSpec): Promise<unknown> {
    const { signal } = this.parts;
    if (signal.aborted) return Promise.reject(signal.reason);
    return new Promise((resolve, reject) => {
      this.pending.push({ spec, resolve, reject });
      this.queueDecision();
    });
  }

  /**
   * Decides a turn of the event loop from now (once, however many ask meanwhile); with no
   * wait pending there is nothing to decide (a wait reached later asks again), so a step's end
   * costs no turn.
   */
  queueDecision(): void {
    if (this.queued || this.ended || this.pending.length === 0) return;
    this.queued = true;
    setImmediate(() => {
      this.queued = false;
      void this.decide();
    });
  }

  private async decide(): Promise<void> {
    if (this.ended || this.deciding || this.hooks.busy() || this.pending.length === 0) return;
    if (this.parts.signal.aborted) return;
    this.deciding = true;
    const waits = this.pending;
    this.pending = [];
    const { db, row, lease, log } = this.parts;
    try {
      await this.parts.signalUrls.written();
      const specs = waits.map((w) => w.spec);
      const outcome = await suspendOrSatisfy(db, row.id, lease, specs, {
        message: waitMessage(specs),
        ranMs: this.parts.ranMs(),
      });
      if (outcome.lost) {
        this.parts.lost();
        for (const wait of waits) wait.reject(new TaskAbortedError('lease-lost'));
        return;
      }
      if ('suspended' in outcome) {
        this.ended = true;
        this.resolveSuspended({ row: outcome.suspended, wakeAt: outcome.wakeAt });
        return;
      }
      this.hooks.journaled();
      for (const wait of waits) {
        const satisfied = outcome.satisfied.get(wait.spec.name);
        if (!satisfied) this.pending.push(wait);
        else this.settle(wait, satisfied);
      }
    } catch (err) {
      // The database failed: the waits fail the attempt, which is retried.
      log.warn({ err: coerceError(err), taskId: row.id }, 'could not suspend the task');
      for (const wait of waits) wait.reject(err);
    } finally {
      this.deciding = false;
      if (!this.ended && this.pending.length > 0) this.queueDecision();
    }
  }

  private settle(wait: PendingWait, satisfied: Satisfied): void {
    const { spec } = wait;
    if ('child' in satisfied) {
      const { childId, status, error } = satisfied.child;
      wait.reject(new ChildTaskError(childId, status, error));
      return;
    }
    if (spec.kind !== 'child') this.hooks.satisfied(spec.name, satisfied.value);
    wait.resolve(satisfied.value);
  }
}
