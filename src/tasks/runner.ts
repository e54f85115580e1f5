import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { Database, TaskRow } from '../db/types.js';
import { coerceError } from './errors.js';
import type { TaskEvents } from './events.js';
import { CompletionWriter } from './completions.js';
import type { KindRegistry, TaskContext } from './kinds.js';
import {
  claimTasks,
  completeTask,
  failLostTasks,
  failTask,
  releaseLeases,
  renewLeases,
  reportProgress,
  requestInput,
  type Lease,
} from './lease-queries.js';
import { findTaskRow } from './store.js';
import type { TaskFailure } from './task.js';

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
  timeoutLeftMs: number;
  timeoutStartedAt: number;
  timeoutTimer: NodeJS.Timeout | undefined;
  expiryTimer: NodeJS.Timeout | undefined;
  unwatch(): void;
  done: Promise<void>;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

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
  private readonly completions: CompletionWriter;

  constructor(private readonly options: RunnerOptions) {
    this.kindNames = options.kinds.names();
    this.completions = new CompletionWriter(options.db);
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
      timeoutLeftMs: row.timeout_ms,
      timeoutStartedAt: Date.now(),
      timeoutTimer: undefined,
      expiryTimer: undefined,
      unwatch: () => {},
      done: Promise.resolve(),
    };
    this.running.set(row.id, entry);
    this.active++;
    entry.unwatch = events.watch(row.id, (changed) => this.changed(entry, changed));
    entry.expiryTimer = setTimeout(() => this.abort(entry, 'expired'), Math.max(0, row.expires_at.getTime() - Date.now()));
    this.armTimeout(entry);

    const ctx: TaskContext = {
      taskId: row.id,
      owner: row.owner,
      attempt: row.attempt,
      input: row.input,
      signal: controller.signal,
      db,
      progress: this.progressWriter(entry),
      requestInput: (request) => this.requestInput(entry, request) as Promise<any>,
    };
    const taskLog = log.child({ taskId: row.id, kind: row.kind, attempt: row.attempt });
    taskLog.debug({ workerId }, 'task claimed');
    entry.done = (async () => {
      try {
        const result = await kind.run(ctx);
        if (!controller.signal.aborted) await this.complete(row.id, lease, result, taskLog);
      } catch (thrown) {
        if (!controller.signal.aborted) {
          const err = coerceError(thrown);
          const failure = failureOf(err);
          taskLog.info({ err, code: failure.code }, 'handler failed');
          await this.retry(() => failTask(db, row.id, lease, failure), taskLog).catch((err: unknown) =>
            taskLog.error({ err: coerceError(err) }, 'could not record the failure; the task will be re-run'),
          );
        }
      } finally {
        this.finish(entry);
      }
    })();
  }

  /**
   * Completes the task. A result the store refuses — not JSON (a BigInt, a cycle), or a string
   * with U+0000 — fails this task with HANDLER_ERROR instead of being retried and re-run until
   * WORKER_LOST; and since completions are written in batches, a refusal is first retried
   * alone, so one bad result does not fail the tasks that happened to share its statement.
   */
  private async complete(id: string, lease: Lease, result: unknown, log: Logger): Promise<void> {
    const { db } = this.options;
    try {
      await this.retry(() => this.completions.complete(id, lease, result), log);
      return;
    } catch {
      // Permanent, for this result or another one in the batch: see which, alone.
    }
    try {
      await this.retry(() => completeTask(db, id, lease, result), log);
    } catch (thrown) {
      const err = coerceError(thrown);
      const failure: TaskFailure = { code: 'HANDLER_ERROR', message: sanitize(`The task's result could not be stored: ${err.message}`) };
      log.info({ err, code: failure.code }, 'handler failed');
      await this.retry(() => failTask(db, id, lease, failure), log).catch((err: unknown) =>
        log.error({ err: coerceError(err) }, 'could not record the failure; the task will be re-run'),
      );
    }
  }

  private finish(entry: Running): void {
    clearTimeout(entry.timeoutTimer);
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
      this.armTimeout(entry);
      waiting.resolve(row.answers[waiting.key]);
    }
  }

  private abort(entry: Running, cause: AbortCause): void {
    if (entry.controller.signal.aborted) return;
    this.options.log.debug({ taskId: entry.row.id, cause }, 'aborting handler');
    entry.controller.abort(new TaskAbortedError(cause));
  }

  private armTimeout(entry: Running): void {
    entry.timeoutStartedAt = Date.now();
    clearTimeout(entry.timeoutTimer);
    entry.timeoutTimer = setTimeout(() => {
      const { db, log } = this.options;
      const failure: TaskFailure = { code: 'TIMEOUT', message: `The task ran longer than its ${entry.row.timeout_ms} ms limit.` };
      this.abort(entry, 'timeout');
      void failTask(db, entry.row.id, entry.lease, failure).catch((err: unknown) =>
        log.warn({ err: coerceError(err), taskId: entry.row.id }, 'could not record a timeout'),
      );
    }, Math.max(0, entry.timeoutLeftMs));
  }

  private pauseTimeout(entry: Running): void {
    clearTimeout(entry.timeoutTimer);
    entry.timeoutLeftMs -= Date.now() - entry.timeoutStartedAt;
  }

  private progressWriter(entry: Running): TaskContext['progress'] {
    const throttleMs = this.options.progressThrottleMs ?? 100;
    let pending: { fraction: number | null; message: string | null } | null = null;
    let writing = false;
    let lastWrite = 0;
    const flush = async (): Promise<void> => {
      if (writing || !pending || entry.controller.signal.aborted) return;
      const wait = lastWrite + throttleMs - Date.now();
      if (wait > 0) {
        writing = true;
        await sleep(wait);
        writing = false;
      }
      const next = pending;
      pending = null;
      if (!next) return;
      writing = true;
      lastWrite = Date.now();
      try {
        await reportProgress(this.options.db, entry.row.id, entry.lease, next.fraction, next.message);
      } catch (err) {
        this.options.log.warn({ err: coerceError(err), taskId: entry.row.id }, 'progress not recorded');
      } finally {
        writing = false;
      }
      if (pending) void flush();
    };
    return (fraction, message) => {
      const clamped = Number.isFinite(fraction) ? Math.min(1, Math.max(0, fraction)) : null;
      pending = { fraction: clamped, message: message ?? null };
      void flush();
    };
  }

  private async requestInput(entry: Running, request: { key: string; message: string; schema?: Record<string, unknown> }): Promise<unknown> {
    const signal = entry.controller.signal;
    signal.throwIfAborted();
    if (Object.hasOwn(entry.row.answers, request.key)) return entry.row.answers[request.key];
    const { db } = this.options;
    this.pauseTimeout(entry);
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
   * Retries a final write through a short database outage, for as long as the lease lasts.
   * @throws what no retry can fix (see `isPermanent`), at once
   */
  private async retry(write: () => Promise<unknown>, log: Logger): Promise<void> {
    const until = Date.now() + this.options.leaseMs;
    for (let delay = 50; ; delay = Math.min(delay * 2, 2_000)) {
      try {
        await write();
        return;
      } catch (err) {
        if (isPermanent(err)) throw err;
        if (Date.now() + delay > until) {
          log.error({ err: coerceError(err) }, 'could not record the outcome; the task will be re-run');
          return;
        }
        log.warn({ err: coerceError(err) }, 'recording the outcome failed; retrying');
        await sleep(delay);
      }
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

const CODE = /^[A-Z][A-Z0-9_]{1,63}$/;

/**
 * An error the same write would meet again: Postgres data exceptions and integrity violations
 * (SQLSTATE classes 22, 23), or a value JSON cannot express (TypeError, RangeError from
 * JSON.stringify). Anything else — a lost connection, a timeout — may pass.
 */
function isPermanent(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && /^2[23][0-9A-Z]{3}$/.test(code)) return true;
  return err instanceof TypeError || err instanceof RangeError;
}

/** Text Postgres can store: no U+0000. */
const sanitize = (text: string) => text.replaceAll('\0', '');

/** What a thrown error means for the task: its own upper-case `code`, or HANDLER_ERROR. */
function failureOf(err: Error): TaskFailure {
  const code = (err as { code?: unknown }).code;
  return {
    code: typeof code === 'string' && CODE.test(code) ? code : 'HANDLER_ERROR',
    message: sanitize(err.message || 'The task failed.').slice(0, 2_000),
  };
}
