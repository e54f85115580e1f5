import { setTimeout as sleep } from 'node:timers/promises';
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { Database, TaskRow } from '../db/types.js';
import { coerceError } from './errors.js';
import type { TaskEvents } from './events.js';
import { failureOf, OutcomeRecorder } from './handler-outcome.js';
import type { KindRegistry, TaskContext } from './kinds.js';
import {
  claimTasks,
  failLostTasks,
  failTask,
  releaseLeases,
  renewLeases,
  requestInput,
  type Lease,
} from './lease-queries.js';
import { progressWriter } from './progress-writer.js';
import { findTaskRow } from './store.js';
import type { TaskFailure } from './task.js';
import { TaskTimeout } from './task-timeout.js';

export type AbortCause = 'cancelled' | 'expired' | 'timeout' | 'lease-lost' | 'shutdown';

/** The reason a handler's signal carries. */
export class TaskAbortedError extends Error {
  constructor(override readonly cause: AbortCause) {
    super(`task aborted: ${cause}`);
    this.name = 'AbortError';
  }
}

export interface RunnerOptions {
  db: Kysely<Database>;
  events: TaskEvents;
  kinds: KindRegistry;
  log: Logger;
  workerId: string;
  /** Handlers running at once; tasks waiting for input do not count. */
  concurrency: number;
  leaseMs: number;
  /** Claim pass that runs even when no NOTIFY arrives. @default min(2000, leaseMs / 3) */
  backstopMs?: number;
  /** Least time between two progress writes of one task. @default 100 */
  progressThrottleMs?: number;
}

interface Running {
  row: TaskRow;
  lease: Lease;
  controller: AbortController;
  /** Local deadline of the lease; past it without a renewal, the task may be someone else's. */
  leaseUntil: number;
  waiting: { key: string; resolve(value: unknown): void } | null;
  timeout: TaskTimeout;
  expiryTimer: NodeJS.Timeout | undefined;
  unwatch(): void;
  done: Promise<void>;
}

/**
 * Runs tasks in this process: woken by NOTIFY (and a backstop poll), claims with
 * `FOR UPDATE SKIP LOCKED` under a lease renewed by heartbeats, runs the kind's handler, and
 * ends the task with writes fenced by the lease. A cancel, expiry, timeout or lost lease
 * aborts the handler's signal; a result that arrives after any of them changes nothing.
 */
export class Runner {
  private readonly running = new Map<string, Running>();
  private active = 0;
  private claiming: Promise<void> | undefined;
  private claimAgain = false;
  private stopping = false;
  private backstopTimer: NodeJS.Timeout | undefined;
  private heartbeatTimer: NodeJS.Timeout | undefined;
  private renewing: Promise<void> | undefined;
  private unsubscribe: Array<() => void> = [];
  private readonly kindNames: string[];
  private readonly progressThrottleMs: number;
  private readonly outcomes: OutcomeRecorder;

  constructor(private readonly options: RunnerOptions) {
    this.kindNames = options.kinds.names();
    this.progressThrottleMs = options.progressThrottleMs ?? 100;
    this.outcomes = new OutcomeRecorder(options.db, options.leaseMs);
  }

  start(): void {
    const { events, leaseMs } = this.options;
    this.unsubscribe.push(events.onReady((kind) => this.kindNames.includes(kind) && this.wake()));
    this.unsubscribe.push(events.onReconnect(() => this.wake()));
    const backstopMs = this.options.backstopMs ?? Math.min(2_000, Math.max(50, leaseMs / 3));
    this.backstopTimer = setInterval(() => this.backstop(), backstopMs);
    this.heartbeatTimer = setInterval(() => this.heartbeat(), Math.max(50, leaseMs / 3));
    this.wake();
  }

  /** Tasks this process holds, running or waiting for input. */
  get held(): number {
    return this.running.size;
  }

  /** True while this process runs (or holds, waiting for input) task `id`. */
  holds(id: string): boolean {
    return this.running.has(id);
  }

  /** Starts a claim pass now (or right after the one in progress). */
  wake(): void {
    if (this.stopping) return;
    if (this.claiming) {
      this.claimAgain = true;
      return;
    }
    this.claiming = this.claimLoop().finally(() => {
      this.claiming = undefined;
      if (this.claimAgain) {
        this.claimAgain = false;
        this.wake();
      }
    });
  }

  private async claimLoop(): Promise<void> {
    const { db, workerId, concurrency, leaseMs, log } = this.options;
    // Let this turn of the event loop finish first: slots freed together are claimed together.
    await new Promise<void>((resolve) => setImmediate(resolve));
    while (!this.stopping && this.active < concurrency) {
      let rows: TaskRow[];
      const claimedAt = Date.now();
      try {
        rows = await claimTasks(db, workerId, this.kindNames, concurrency - this.active, leaseMs);
      } catch (err) {
        log.warn({ err: coerceError(err) }, 'claiming tasks failed; the backstop will retry');
        return;
      }
      if (this.stopping) {
        await releaseLeases(db, workerId, rows.map((r) => ({ id: r.id, attempt: r.attempt }))).catch(() => 0);
        return;
      }
      for (const row of rows) this.run(row, claimedAt);
      if (rows.length === 0) return;
    }
  }

  private backstop(): void {
    void failLostTasks(this.options.db).catch((err: unknown) =>
      this.options.log.warn({ err: coerceError(err) }, 'failing lost tasks failed'),
    );
    this.wake();
  }

  /** @param claimedAt when the claim was sent: the lease runs from no earlier than this */
  private run(row: TaskRow, claimedAt: number): void {
    const { db, events, kinds, log, workerId, leaseMs } = this.options;
    const kind = kinds.require(row.kind);
    const lease: Lease = { workerId, attempt: row.attempt };
    const controller = new AbortController();
    const entry: Running = {
      row,
      lease,
      controller,
      leaseUntil: claimedAt + leaseMs,
      waiting: null,
      timeout: new TaskTimeout(row.timeout_ms, () => this.timedOut(entry)),
      expiryTimer: undefined,
      unwatch: () => {},
      done: Promise.resolve(),
    };
    this.running.set(row.id, entry);
    this.active++;
    entry.unwatch = events.watch(row.id, (changed) => this.changed(entry, changed));
    entry.expiryTimer = setTimeout(() => this.abort(entry, 'expired'), Math.max(0, row.expires_at.getTime() - Date.now()));
    entry.timeout.start();

    const ctx: TaskContext = {
      taskId: row.id,
      owner: row.owner,
      attempt: row.attempt,
      input: row.input,
      signal: controller.signal,
      db,
      progress: progressWriter({ db, log, taskId: row.id, lease, signal: controller.signal, throttleMs: this.progressThrottleMs }),
      requestInput: (request) => this.requestInput(entry, request) as Promise<any>,
    };
    const taskLog = log.child({ taskId: row.id, kind: row.kind, attempt: row.attempt });
    taskLog.debug({ workerId }, 'task claimed');
    entry.done = (async () => {
      try {
        const result = await kind.run(ctx);
        if (!controller.signal.aborted) await this.outcomes.complete(row.id, lease, result, taskLog);
      } catch (thrown) {
        if (!controller.signal.aborted) {
          const err = coerceError(thrown);
          const failure = failureOf(err);
          taskLog.info({ err, code: failure.code }, 'handler failed');
          await this.outcomes.fail(row.id, lease, failure, taskLog);
        }
      } finally {
        this.finish(entry);
      }
    })();
  }

  private finish(entry: Running): void {
    entry.timeout.clear();
    clearTimeout(entry.expiryTimer);
    entry.unwatch();
    if (this.running.get(entry.row.id) === entry) {
      this.running.delete(entry.row.id);
      if (!entry.waiting) this.active--;
    }
    this.wake();
  }

  private changed(entry: Running, row: TaskRow | undefined): void {
    if (!row) return this.abort(entry, 'expired');
    if (row.version < entry.row.version) return; // a slower read than one already seen
    entry.row = { ...row, answers: row.answers };
    if (row.status === 'cancelled') return this.abort(entry, 'cancelled');
    if (row.worker_id !== entry.lease.workerId || row.attempt !== entry.lease.attempt) return this.abort(entry, 'lease-lost');
    const waiting = entry.waiting;
    if (waiting && row.status === 'working' && Object.hasOwn(row.answers, waiting.key)) {
      entry.waiting = null;
      this.active++;
      entry.timeout.start();
      waiting.resolve(row.answers[waiting.key]);
    }
  }

  private abort(entry: Running, cause: AbortCause): void {
    if (entry.controller.signal.aborted) return;
    this.options.log.debug({ taskId: entry.row.id, cause }, 'aborting handler');
    entry.controller.abort(new TaskAbortedError(cause));
  }

  private timedOut(entry: Running): void {
    const { db, log } = this.options;
    const failure: TaskFailure = { code: 'TIMEOUT', message: `The task ran longer than its ${entry.row.timeout_ms} ms limit.` };
    this.abort(entry, 'timeout');
    void failTask(db, entry.row.id, entry.lease, failure).catch((err: unknown) =>
      log.warn({ err: coerceError(err), taskId: entry.row.id }, 'could not record a timeout'),
    );
  }

  private async requestInput(entry: Running, request: { key: string; message: string; schema?: Record<string, unknown> }): Promise<unknown> {
    const signal = entry.controller.signal;
    signal.throwIfAborted();
    if (Object.hasOwn(entry.row.answers, request.key)) return entry.row.answers[request.key];
    const { db } = this.options;
    entry.timeout.pause();
    return new Promise<unknown>((resolve, reject) => {
      entry.waiting = { key: request.key, resolve };
      this.active--;
      this.wake();
      const onAbort = () => reject(signal.reason);
      signal.addEventListener('abort', onAbort, { once: true });
      void requestInput(db, entry.row.id, entry.lease, {
        key: request.key,
        message: request.message,
        ...(request.schema ? { schema: request.schema } : {}),
      }).then(
        (row) => {
          if (!row) this.abort(entry, 'lease-lost');
        },
        (err: unknown) => {
          this.options.log.warn({ err: coerceError(err), taskId: entry.row.id }, 'could not ask for input');
          this.abort(entry, 'lease-lost');
        },
      );
    });
  }

  /**
   * Renews every lease this process holds. Past its local deadline without a renewal (the
   * database is unreachable, a renewal hangs, the process was paused) a task may already be
   * another worker's, so its handler is aborted rather than left running twice at once.
   */
  private heartbeat(): void {
    const startedAt = Date.now();
    for (const entry of this.running.values()) if (entry.leaseUntil < startedAt) this.abort(entry, 'lease-lost');
    if (this.renewing || this.running.size === 0) return;
    this.renewing = this.renew(startedAt).finally(() => (this.renewing = undefined));
  }

  private async renew(startedAt: number): Promise<void> {
    const { db, workerId, leaseMs, log } = this.options;
    const entries = [...this.running.values()];
    try {
      const held = await renewLeases(db, workerId, entries.map((e) => ({ id: e.row.id, attempt: e.lease.attempt })), leaseMs);
      for (const entry of entries) {
        const status = held.get(entry.row.id);
        if (status === undefined) {
          // Lost, or cancelled or finished without this process hearing of it: stop either way.
          this.abort(entry, 'lease-lost');
          continue;
        }
        entry.leaseUntil = startedAt + leaseMs;
        // Answered, but the notification never came: read the answer rather than wait forever.
        if (entry.waiting && status === 'working') {
          findTaskRow(db, entry.row.id).then(
            (row) => this.changed(entry, row),
            (err: unknown) => log.warn({ err: coerceError(err), taskId: entry.row.id }, 'could not re-read an answered task'),
          );
        }
      }
    } catch (err) {
      log.warn({ err: coerceError(err) }, 'lease renewal failed');
      // Past the lease another worker may own the task: stop rather than run twice at once.
      for (const entry of entries) if (entry.leaseUntil < Date.now()) this.abort(entry, 'lease-lost');
    }
  }

  /**
   * Stops claiming, lets running handlers finish for `graceMs`, aborts the rest and gives
   * their leases back (without counting the attempt) so another worker takes them at once.
   */
  async stop(graceMs: number): Promise<void> {
    this.stopping = true;
    clearInterval(this.backstopTimer);
    for (const off of this.unsubscribe) off();
    // A claim in flight gives back what it got (see claimLoop) while the database is still open.
    await Promise.race([this.claiming, sleep(1_000)]);
    // Heartbeats go on through the grace period: a lapsed lease would let another worker run
    // a task this process is still finishing.
    const all = () => Promise.all([...this.running.values()].map((e) => e.done));
    const busy = [...this.running.values()].filter((e) => !e.waiting);
    if (busy.length > 0) await Promise.race([Promise.all(busy.map((e) => e.done)), sleep(graceMs)]);
    const left = [...this.running.values()];
    for (const entry of left) this.abort(entry, 'shutdown');
    await Promise.race([all(), sleep(1_000)]);
    clearInterval(this.heartbeatTimer);
    await Promise.race([this.renewing, sleep(1_000)]);
    const released = await releaseLeases(
      this.options.db,
      this.options.workerId,
      left.map((e) => ({ id: e.row.id, attempt: e.lease.attempt })),
    ).catch((err: unknown) => {
      this.options.log.error({ err: coerceError(err) }, 'could not release leases; they lapse after TASK_LEASE_MS');
      return 0;
    });
    if (left.length > 0) this.options.log.info({ aborted: left.length, released }, 'runner stopped');
  }
}
