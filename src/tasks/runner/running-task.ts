import type { Logger } from 'pino';
import type { TaskRow } from '../../db/types.js';
import { coerceError } from '../../errors.js';
import { failed as spanFailed } from '../../tracing/tracer.js';
import { ChildTaskError, TaskFailedError, type TaskKind } from '../kinds.js';
import { backoffMs } from '../retry.js';
import type { Lease } from '../sql/leases.js';
import type { TaskFailure } from '../status.js';
import { DurableRun } from '../steps/durable-run.js';
import { SignalUrls } from '../steps/signal-urls.js';
import type { Suspension } from '../steps/waits.js';
import { type AbortCause, HandlerAbort, TaskAbortedError } from './aborted.js';
import { InputWait } from './input-wait.js';
import { failureOf, logFailure, type TaskLog } from './outcome.js';
import { taskContext } from './task-context.js';
import type { RunningTaskOptions } from './task-host.js';
import { TaskTimeout } from './task-timeout.js';
import { attemptSpan } from './trace.js';

/**
 * One claimed task in this process: its handler, the abort controller behind the handler's
 * signal, its timers (run-time limit, retention), the watch on its row, whether it waits for
 * input, and the local deadline of its lease. A cancel, expiry, timeout or lost lease aborts
 * the handler; a result that arrives after any of them changes nothing.
 */
export class RunningTask {
  readonly lease: Lease;
  /** When the task was given its slot (performance.now()). */
  readonly startedAt = performance.now();
  /** Settles once the handler is done and its outcome recorded; never rejects. */
  done: Promise<void> = Promise.resolve();
  private row: TaskRow;
  /** The handler returned (or threw): its slot is free, its outcome may still be in writing. */
  private returned = false;
  private readonly stopped = new HandlerAbort();
  private readonly timeout: TaskTimeout;
  private expiryTimer: NodeJS.Timeout | undefined;
  private unwatch: () => void = () => {};
  /** Local deadline of the lease; past it without a renewal, the task may be someone else's. */
  private leaseUntil: number;
  /** The handler's wait for input, once it asked (see `input`). */
  private inputWait: InputWait | undefined;
  /** Its steps, waits and children, once it used them or has a journal (see `durable`). */
  private durableRun: DurableRun | undefined;
  /** Ends the run as suspended (set while the handler runs). */
  private suspend: ((suspended: Suspension) => void) | undefined;

  /** @param claimedAt when the claim was sent: the lease runs from no earlier than this */
  constructor(
    row: TaskRow,
    workerId: string,
    claimedAt: number,
    private readonly options: RunningTaskOptions,
  ) {
    this.row = row;
    this.lease = { workerId, attempt: row.attempt };
    this.leaseUntil = claimedAt + options.leaseMs;
    this.timeout = new TaskTimeout(row.timeout_ms, row.ran_ms, () => this.timedOut());
  }

  /** The handler's wait for input, made when it first asks. */
  private input(): InputWait {
    const { db, log, host } = this.options;
    this.inputWait ??= new InputWait({
      db,
      log,
      lease: this.lease,
      signal: this.stopped.signal,
      paused: () => {
        this.timeout.pause();
        host.slotFreed(this, false);
      },
      abort: (cause) => this.abort(cause),
    });
    return this.inputWait;
  }

  /**
   * The run's steps, waits and children (DESIGN §16), made when the handler first uses them
   * (or before it starts, when the task has a journal to load). A suspension ends the run.
   */
  private durable(): DurableRun {
    if (this.durableRun) return this.durableRun;
    const { db, log, children, publicUrl } = this.options;
    const { row, lease } = this;
    const durable = new DurableRun({
      db,
      log,
      row,
      lease,
      signal: this.stopped.signal,
      children,
      signalUrls: new SignalUrls(db, row.id, lease, publicUrl()),
      lost: () => this.abort('lease-lost'),
      ranMs: () => this.timeout.used(),
    });
    this.durableRun = durable;
    void durable.suspended.then((suspended) => this.suspend?.(suspended));
    return durable;
  }

  /** Watches the row, starts the clocks and runs the handler (`done` follows it). */
  start(kind: TaskKind<any, any>): void {
    const { events, log } = this.options;
    this.unwatch = events.watch(this.row.id, (changed) => this.changed(changed));
    this.expiryTimer = setTimeout(
      () => this.abort('expired'),
      Math.max(0, this.row.expires_at.getTime() - Date.now()),
    );
    this.timeout.start();
    this.done = this.run(kind).catch((err: unknown) =>
      log.error({ err: coerceError(err), taskId: this.row.id }, 'runner bookkeeping failed'),
    );
  }

  get id(): string {
    return this.row.id;
  }

  /** The task takes a slot of a concurrency key (its kind's or its own limit). */
  get keyed(): boolean {
    return this.row.concurrency_limit !== null;
  }

  /** True while the handler waits for its owner's input (it takes no slot then). */
  get waiting(): boolean {
    return this.inputWait?.waiting ?? false;
  }

  /** True while the handler takes a runner slot: running, not waiting, not yet returned. */
  get busy(): boolean {
    return !this.returned && !this.waiting;
  }

  /** True once the lease's local deadline passed at `now` without a renewal. */
  lapsed(now: number): boolean {
    return this.leaseUntil < now;
  }

  /** The lease was renewed by a statement sent at `sentAt`. */
  renewed(sentAt: number): void {
    this.leaseUntil = sentAt + this.options.leaseMs;
  }

  /** Aborts the handler's signal with `cause` (once; later causes are ignored). */
  abort(cause: AbortCause): void {
    if (this.stopped.aborted) return;
    if (cause === 'lease-lost') this.options.observer?.leaseLost();
    this.options.log.debug({ taskId: this.row.id, cause }, 'aborting handler');
    this.stopped.abort(new TaskAbortedError(cause));
  }

  /** The row as re-read after a change (`undefined`: gone). */
  changed(row: TaskRow | undefined): void {
    if (!row) {
      this.abort('expired');
      return;
    }
    // Only a newer version is news. A claim does not bump the version, so a row of the claimed
    // version may be one read before the claim, without this lease: taking it for a lost lease
    // would stop the handler of a task this process still holds (lost leases are found by the
    // lease keeper's renewals, and by newer versions written under another lease).
    if (row.version <= this.row.version) return;
    this.row = row;
    if (row.status === 'cancelled') {
      this.abort('cancelled');
      return;
    }
    if (row.worker_id !== this.lease.workerId || row.attempt !== this.lease.attempt) {
      this.abort('lease-lost');
      return;
    }
    if (this.inputWait?.resumeOn(row)) {
      this.timeout.start();
      this.options.host.slotTaken(this);
    }
  }

  private async run(kind: TaskKind<any, any>): Promise<void> {
    const { db, log, progressThrottleMs, outcomes } = this.options;
    const { row, lease, stopped } = this;
    const ctx = taskContext(row, {
      db,
      log,
      lease,
      signal: () => stopped.signal,
      progressThrottleMs,
      ask: (requests) => this.input().ask(this.row, requests),
      durable: () => this.durable(),
    });
    let taskLog: Logger | undefined;
    /** The task's own logger, made when there is something to say. */
    const logger: TaskLog = () => {
      taskLog ??= log.child({ taskId: row.id, kind: row.kind, attempt: row.attempt });
      return taskLog;
    };
    if (log.isLevelEnabled('debug')) logger().debug({ workerId: lease.workerId }, 'task claimed');
    const started = performance.now();
    let failed = false;
    const attempt = attemptSpan(row, lease.workerId);
    try {
      let ran: { result: unknown } | { suspended: Suspension };
      try {
        // A task with a journal reads it before its handler starts.
        if (row.journaled) await this.durable().load();
        // A handler suspended on its waits never returns: the suspension ends the run.
        ran = await new Promise((resolve, reject) => {
          this.suspend = (suspended) => resolve({ suspended });
          attempt.run(() => kind.run(ctx)).then((result: unknown) => resolve({ result }), reject);
        });
      } finally {
        this.suspend = undefined;
        this.durableRun?.end();
        this.handlerReturned();
      }
      if ('suspended' in ran) {
        this.abort('suspended');
        const { wakeAt } = ran.suspended;
        if (wakeAt) this.options.host.dueAt(wakeAt.getTime());
      } else if (!stopped.aborted) await outcomes.complete(row.id, lease, ran.result, logger);
    } catch (thrown) {
      if (!stopped.aborted) {
        failed = true;
        const err = coerceError(thrown);
        const failure = failureOf(err);
        logFailure(logger(), err, failure);
        spanFailed(attempt.span, err, failure.code);
        // A TaskFailedError is the handler saying the failure is final; anything else ends
        // this attempt only.
        // So does a child's failure it did not catch: the journal would give it again.
        if (
          err instanceof TaskFailedError ||
          err.name === 'TaskFailedError' ||
          err instanceof ChildTaskError
        )
          await outcomes.fail(row.id, lease, failure, logger);
        else await this.endAttempt(failure, logger);
      }
    } finally {
      const reason = stopped.reason;
      const outcome = reason?.cause ?? (failed ? 'failed' : 'completed');
      this.options.observer?.ran(row.kind, outcome, (performance.now() - started) / 1000);
      attempt.span.setAttribute('taskhandle.task.outcome', outcome);
      attempt.span.end();
      this.timeout.clear();
      clearTimeout(this.expiryTimer);
      this.unwatch();
      this.inputWait?.end();
      this.options.host.ended(this);
    }
  }

  /**
   * The handler is done: its slot goes to the next task while the outcome is written. What
   * becomes of the row is for the outcome's statement to decide (it checks the lease and the
   * status), so the changes announced meanwhile, this outcome's own among them, need not be
   * read back.
   */
  private handlerReturned(): void {
    if (this.returned) return;
    this.returned = true;
    this.unwatch();
    this.options.host.slotFreed(this, true);
  }

  /** Records a failed attempt: retried with backoff while the policy allows, else failed. */
  private async endAttempt(failure: TaskFailure, log: TaskLog): Promise<void> {
    const { row } = this;
    const delayMs = backoffMs(
      {
        maxAttempts: row.max_attempts,
        initialDelayMs: row.retry_initial_delay_ms,
        factor: row.retry_factor,
        maxDelayMs: row.retry_max_delay_ms,
      },
      this.lease.attempt,
    );
    const written = await this.options.outcomes.endAttempt(
      row.id,
      this.lease,
      failure,
      delayMs,
      log,
    );
    if (written?.status === 'working') this.options.host.dueAt(written.run_at.getTime());
  }

  private timedOut(): void {
    const failure: TaskFailure = {
      code: 'TIMEOUT',
      message: `The task ran longer than its ${this.row.timeout_ms} ms limit.`,
    };
    this.abort('timeout');
    void this.endAttempt(failure, () => this.options.log.child({ taskId: this.row.id }));
  }
}
