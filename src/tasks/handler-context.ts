import type { RateLimit } from './flow-control.js';
import type { TaskPage } from './requests.js';
import type { RetryPolicy } from './retry.js';
import type { TaskStatus } from './status.js';

/**
 * What a task kind's handler is given (DESIGN §5, §14, §16): its context `ctx` and the shapes
 * of what it may ask of it. The runner builds it (runner/task-context.ts); kinds.ts declares
 * the kinds that receive it.
 */

export interface OwnTasksRequest {
  /** Tasks on the page, 1..1000. @default 100 */
  first?: number;
  /** The `endCursor` of the page before. */
  after?: string | null;
  /** Only tasks in these statuses; null or empty: all. */
  statuses?: readonly TaskStatus[] | null;
}

/** A question a handler asks its task's owner (`requestInput`, `requestInputs`). */
export interface InputQuestion {
  /** Names the answer: `provideTaskInput(id, key, value)`. */
  key: string;
  /** What the owner is asked. */
  message: string;
  /** JSON Schema the answer must satisfy. */
  schema?: Record<string, unknown>;
}

/** What `ctx.startChild` may set of a child task (DESIGN §16); the rest is the kind's. */
export interface ChildOptions {
  priority?: number;
  labels?: Record<string, string>;
  retry?: Partial<RetryPolicy>;
  concurrencyKey?: string;
  concurrencyLimit?: number;
  /** DESIGN §17: the key its kind's (or its own) rate limit counts by. @default the owner */
  rateLimitKey?: string;
  rateLimit?: RateLimit;
  /** At most what is left of the parent's retention, which is also the default. */
  ttlMs?: number;
}

/** A child task as its parent's handler holds it. */
export interface ChildTask {
  readonly id: string;
  /**
   * The child's result, waited for durably: while the child runs, the parent is suspended
   * (no slot, no lease) and runs again once it ended. Rejects with a `ChildTaskError` when the
   * child ended FAILED or CANCELLED. Await many at once (`Promise.all`): the parent then wakes
   * when all of them ended, or at the first failure, not once per child.
   */
  result<R = unknown>(): Promise<R>;
}

/** What `ctx.waitForSignal` may be told. */
export interface SignalWaitOptions {
  /** Resolve `null` once this long passed since the wait was first reached. @default none */
  timeoutMs?: number;
  /** JSON Schema a payload must satisfy; one that does not is refused (BAD_USER_INPUT). */
  schema?: Record<string, unknown>;
}

/** What a handler gets. */
export interface TaskContext<Input = unknown> {
  readonly taskId: string;
  readonly owner: string;
  /** 1 on the first run; higher on a retry (DESIGN §14) or after a worker was lost. */
  readonly attempt: number;
  readonly input: Input;
  /** Aborted on cancel, expiry, timeout, lost lease or shutdown; stop promptly when it fires. */
  readonly signal: AbortSignal;
  /** Reports progress (0..1) and an optional status message. Writes are throttled; the latest wins. */
  progress(fraction: number, message?: string): void;
  /**
   * Asks the task's owner for input: the task becomes INPUT_REQUIRED until `provideTaskInput`
   * answers `key` with a value valid against `schema`. An answer already given (on an earlier
   * attempt) is returned at once.
   */
  requestInput<T = unknown>(request: InputQuestion): Promise<T>;
  /**
   * Asks the task's owner several questions at once: the task becomes INPUT_REQUIRED with all
   * of them outstanding, each answered on its own (`provideTaskInput` with its `key`, in any
   * order, each value checked against its own `schema`) and stored as it comes; the task
   * resumes once every one is answered. Resolves to the answers by key. Answers already given
   * (on an earlier attempt) are not asked again; when all were given it resolves at once.
   * The keys must differ; an empty list resolves to `{}`.
   */
  requestInputs<T extends Record<string, unknown> = Record<string, unknown>>(
    requests: readonly InputQuestion[],
  ): Promise<T>;
  /**
   * One page of the owner's own unexpired tasks, newest first (this task included): what the
   * owner could list themselves, and nothing else of the store.
   */
  listOwnTasks(request: OwnTasksRequest): Promise<TaskPage>;
  /**
   * Runs `fn` once per task (DESIGN §16): its result (JSON, at most 1 MiB) is committed to the
   * task's journal under `name` before this resolves, and any later run of the task (a retry,
   * a lost worker, a wake-up) gets the journalled result without calling `fn`. A step that
   * throws records the error and the throw goes on. `name`: 1..128 printable characters, once
   * per run (twice: STEP_NAME_REUSED, failing the attempt). A value comes back as JSON would
   * give it (`undefined` as `null`, Dates as text), on the first run as on the later ones.
   */
  step<T>(name: string, fn: (signal: AbortSignal) => Promise<T>): Promise<T>;
  /** Waits `ms` durably: the task is suspended (no slot, no lease) and runs again after. */
  sleep(name: string, ms: number): Promise<void>;
  /** Waits until `at` durably, as `sleep`. */
  sleepUntil(name: string, at: Date): Promise<void>;
  /**
   * Waits durably for the signal `name` (`signalTask`, REST, or `signalUrl(name)`): resolves
   * with its payload, also when it was sent before the wait was reached; `null` once
   * `timeoutMs` passed.
   */
  waitForSignal<T = unknown>(name: string, options?: SignalWaitOptions): Promise<T | null>;
  /**
   * A capability URL an outside system may POST the signal `name`'s payload to, without a
   * token: bound to this task and name, dead once the task ends. The same URL on every run.
   */
  signalUrl(name: string): string;
  /**
   * Starts a task of the same owner as this one's child, once per `name`: a later run gets the
   * same child back. Its retention defaults to, and may not outlast, this task's.
   */
  startChild(
    name: string,
    kind: string,
    input: unknown,
    options?: ChildOptions,
  ): Promise<ChildTask>;
}
