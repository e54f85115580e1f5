import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { Database, StepRow, TaskRow } from '../../db/types.js';
import { coerceError, ServiceError } from '../../errors.js';
import {
  type ChildOptions,
  type ChildTask,
  ChildTaskError,
  type SignalWaitOptions,
} from '../kinds.js';
import { TaskAbortedError } from '../runner/aborted.js';
import { failureOf } from '../runner/outcome.js';
import { jsonText } from '../sql/common.js';
import type { Lease } from '../sql/leases.js';
import type { TaskFailure, TaskStatus } from '../status.js';
import { type ChildStarts, childEntry } from './child-starts.js';
import { commitStep, markStepRunning, recordStepFailure, type StepCommit } from './journal-sql.js';
import { checkStepName, MAX_STEP_RESULT_BYTES } from './names.js';
import { RunJournal } from './run-journal.js';
import type { SignalUrls } from './signal-urls.js';
import type { WaitSpec } from './suspend-sql.js';
import { type Suspension, Waits } from './waits.js';

/** A step's `fn` running this long shows as `RUNNING`; shorter ones are journalled before anyone could look. */
const SHOW_RUNNING_AFTER_MS = 250;

/** What a run of a task needs for its steps, waits and children. */
export interface DurableRunParts {
  db: Kysely<Database>;
  log: Logger;
  /** The row as claimed. */
  row: TaskRow;
  lease: Lease;
  /** The handler's signal. */
  signal: AbortSignal;
  children: ChildStarts;
  signalUrls: SignalUrls;
  /** The lease turned out lost (a fenced write found it gone): the run must stop. */
  lost(): void;
  /** The running time this attempt has used, its earlier runs' included (for `ran_ms`). */
  ranMs(): number;
}

/**
 * One run of a task's handler against its journal (DESIGN §16): `ctx.step`, the waits and
 * the children. A run that reaches waits it cannot satisfy is **suspended**: once no step's
 * `fn` is running and the handler has had a turn of the event loop to reach every wait it
 * awaits together (a `Promise.all` over many children), one transaction suspends the task
 * on all of them (`suspendOrSatisfy`), `suspended` settles, and the runner ends the run
 * without an outcome; the handler's promise is left behind. Work outside steps that is in
 * flight then is cut (the handler's signal aborts), as a crash would cut it: the next run
 * starts from the top and replays the journal.
 */
export class DurableRun {
  /** Settles once the task is suspended: the run is over. */
  readonly suspended: Promise<Suspension>;
  private readonly waits: Waits;
  private readonly journal: RunJournal;
  /** Step `fn`s and child starts in flight: no suspension while any runs. */
  private busy = 0;
  /** Children started this run (with those of earlier runs: the limit's count). */
  private childCount: number;

  constructor(private readonly parts: DurableRunParts) {
    this.journal = new RunJournal(parts);
    this.childCount = parts.row.children_count;
    this.waits = new Waits(parts, {
      busy: () => this.busy > 0,
      satisfied: (name, value) => {
        this.journal.complete(name, value);
        this.journal.signals.delete(name);
      },
      journaled: () => this.journal.written(),
    });
    this.suspended = this.waits.suspended;
  }

  /** Reads the journal when the task has one; a task that never journalled costs no read. */
  load(): Promise<void> {
    return this.journal.load();
  }

  /** The handler is done (returned, threw, or the run was stopped): nothing more is suspended. */
  end(): void {
    this.waits.end();
  }

  /** `ctx.step`. */
  async step<T>(name: string, fn: (signal: AbortSignal) => Promise<T>): Promise<T> {
    this.journal.use(name, 'step name');
    const { db, row, lease, signal } = this.parts;
    const entry = this.journal.steps.get(name);
    if (entry?.state === 'COMPLETED') return entry.result as T;
    signal.throwIfAborted();
    await this.parts.signalUrls.written();
    const step = {
      name,
      position: this.journal.position(name),
      attempts: (entry?.attempts ?? 0) + 1,
      startedAt: new Date(),
    };
    this.busy++;
    this.parts.log.debug({ taskId: row.id, step: name, attempts: step.attempts }, 'step started');
    const running = setTimeout(() => this.showRunning(step), SHOW_RUNNING_AFTER_MS);
    let text: string | null;
    try {
      const value = await fn(signal).finally(() => clearTimeout(running));
      text = jsonText(value ?? null);
      if (text !== null && Buffer.byteLength(text) > MAX_STEP_RESULT_BYTES)
        throw new ServiceError(
          'BAD_USER_INPUT',
          `The result of step ${JSON.stringify(name)} is over 1 MiB of JSON; keep large data elsewhere and journal a reference.`,
        );
    } catch (thrown) {
      this.busy--;
      const error = failureOf(coerceError(thrown));
      await recordStepFailure(
        db,
        row.id,
        lease,
        { ...step, error },
        this.journal.firstWrite(),
      ).catch((err: unknown) =>
        this.parts.log.warn(
          { err: coerceError(err), taskId: row.id },
          'could not record a step failure',
        ),
      );
      this.waits.queueDecision();
      throw thrown;
    }
    try {
      const first = this.journal.firstWrite();
      const written = await commitStep(db, row.id, lease, { ...step, result: text }, first);
      if (!written) {
        this.parts.lost();
        throw new TaskAbortedError('lease-lost');
      }
      this.parts.log.debug({ taskId: row.id, step: name }, 'step journalled');
      return written.result as T;
    } finally {
      this.busy--;
      this.waits.queueDecision();
    }
  }

  /**
   * Journals a step that is taking a while as `RUNNING`, for the timeline; a run that dies
   * inside it leaves it so, and the next run counts the attempt.
   */
  private showRunning(step: Omit<StepCommit, 'result'>): void {
    const { db, row, lease, log } = this.parts;
    markStepRunning(db, row.id, lease, step, this.journal.firstWrite()).catch((err: unknown) =>
      log.warn({ err: coerceError(err), taskId: row.id }, 'could not show a running step'),
    );
  }

  /** `ctx.sleep` and `ctx.sleepUntil`. */
  sleepUntil(name: string, at: Date): Promise<void> {
    try {
      this.journal.use(name, 'sleep name');
    } catch (err) {
      return Promise.reject(err);
    }
    if (!(at instanceof Date) || Number.isNaN(at.getTime()))
      return Promise.reject(new ServiceError('BAD_USER_INPUT', `sleep ${name}: not a date.`));
    const entry = this.journal.steps.get(name);
    if (entry?.state === 'COMPLETED') return Promise.resolve();
    // The first run's instant holds: a later run waits for the same moment.
    const wakeAt = entry?.wake_at ?? at;
    if (this.journal.due(wakeAt)) {
      this.journal.complete(name, null);
      return Promise.resolve();
    }
    return this.wait({ kind: 'time', name, position: this.journal.position(name), wakeAt }).then(
      () => undefined,
    );
  }

  sleep(name: string, ms: number): Promise<void> {
    if (typeof ms !== 'number' || !Number.isFinite(ms))
      return Promise.reject(
        new ServiceError('BAD_USER_INPUT', `sleep ${name}: ms must be a number.`),
      );
    return this.sleepUntil(name, new Date(Date.now() + Math.max(0, ms)));
  }

  /** `ctx.waitForSignal`. */
  waitForSignal<T>(name: string, options: SignalWaitOptions = {}): Promise<T | null> {
    try {
      this.journal.use(name, 'signal name');
    } catch (err) {
      return Promise.reject(err);
    }
    const entry = this.journal.steps.get(name);
    if (entry?.state === 'COMPLETED') return Promise.resolve(entry.result as T | null);
    const schema = options.schema ?? null;
    const kept = this.journal.signals.get(name);
    // A payload kept before this run is checked in the suspension, with the schema (it may
    // not fit, and is then dropped there): only one known to fit returns here.
    if (this.journal.signals.has(name) && !schema) {
      this.journal.complete(name, kept);
      return Promise.resolve(kept as T);
    }
    const timeout = options.timeoutMs;
    if (timeout !== undefined && (!Number.isInteger(timeout) || timeout < 1))
      return Promise.reject(
        new ServiceError('BAD_USER_INPUT', `signal ${name}: timeoutMs must be a positive integer.`),
      );
    // The timeout counts from the first run that reached the wait.
    const wakeAt =
      entry?.wake_at ?? (timeout === undefined ? null : new Date(Date.now() + timeout));
    if (wakeAt && this.journal.due(wakeAt) && !this.journal.signals.has(name)) {
      this.journal.complete(name, null);
      return Promise.resolve(null);
    }
    return this.wait({
      kind: 'signal',
      name,
      position: this.journal.position(name),
      wakeAt,
      schema,
    }) as Promise<T | null>;
  }

  /** `ctx.signalUrl`: the same URL on every run (see `SignalUrls`). */
  signalUrl(name: string): string {
    checkStepName(name, 'signal name');
    return this.parts.signalUrls.url(
      name,
      this.journal.steps.get(name)?.signal_url ?? null,
      this.journal.position(name),
    );
  }

  /** `ctx.startChild`. */
  async startChild(
    name: string,
    kind: string,
    input: unknown,
    options: ChildOptions = {},
  ): Promise<ChildTask> {
    this.journal.use(name, 'child name');
    const entry = this.journal.steps.get(name);
    if (entry?.child_id) return this.childTask(name, entry.child_id);
    if (entry)
      throw Object.assign(
        new Error(`The journal entry ${JSON.stringify(name)} is not a child task.`),
        { code: 'STEP_NAME_REUSED' },
      );
    this.childCount++;
    this.busy++;
    try {
      await this.parts.signalUrls.written();
      const row = await this.parts.children.start(this.parts.row, this.parts.lease, {
        name,
        position: this.journal.position(name),
        kind,
        input,
        options,
        count: this.childCount,
      });
      this.journal.written();
      this.journal.steps.set(
        name,
        childEntry(this.parts.row.id, name, this.journal.position(name), row),
      );
      return this.childTask(name, row.id);
    } catch (err) {
      this.childCount--;
      throw err;
    } finally {
      this.busy--;
      this.waits.queueDecision();
    }
  }

  private childTask(name: string, id: string): ChildTask {
    return { id, result: <R>() => this.childResult(name, id) as Promise<R> };
  }

  /** `child.result()`: the journal's record of its end, or a wait for it. */
  private childResult(name: string, childId: string): Promise<unknown> {
    const entry = this.journal.steps.get(name);
    if (entry?.child_status === 'completed') return Promise.resolve(entry.result);
    if (entry?.child_status) return Promise.reject(childError(childId, entry));
    return this.wait({ kind: 'child', name, childId });
  }

  private wait(spec: WaitSpec): Promise<unknown> {
    return this.waits.wait(spec);
  }
}

function childError(childId: string, entry: StepRow): ChildTaskError {
  const recorded = entry.error as { error?: TaskFailure | null } | null;
  return new ChildTaskError(childId, entry.child_status as TaskStatus, recorded?.error ?? null);
}
