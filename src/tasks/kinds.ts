import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { ServiceError } from '../errors.js';
import { type RateLimit, rateLimitProblem } from './flow-control.js';
import type { TaskPage } from './requests.js';
import { DEFAULT_RETRY, type RetryPolicy, resolveRetry } from './retry.js';
import type { TaskStatus } from './status.js';

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

/**
 * How a kind may be called over MCP (its `execution.taskSupport`): `optional` answers a task
 * to a client that can follow one and the finished result to any other; `required` refuses a
 * client that cannot follow a task; `forbidden` always answers the finished result.
 */
export type TaskSupport = 'optional' | 'required' | 'forbidden';

export interface TaskKindOptions<Input, Result> {
  name: string;
  description: string;
  /** JSON Schema (draft 2020-12 subset understood by Ajv) that `input` must satisfy. */
  inputSchema: Record<string, unknown>;
  /** Retention when startTask gives none. @default TASK_DEFAULT_TTL_MS */
  ttlMs?: number | undefined;
  /** What handles tell pollers while working. @default 1000 */
  pollIntervalMs?: number;
  /** A run longer than this fails with TIMEOUT; time spent waiting for input does not count. @default 900_000 */
  timeoutMs?: number;
  /**
   * How a failed attempt is retried: a throw (anything but a TaskFailedError), a timeout or a
   * lost worker each use an attempt. Omitted fields take the default's.
   * @default { maxAttempts: 3, initialDelayMs: 1000, factor: 2, maxDelayMs: 60000 }
   */
  retry?: Partial<RetryPolicy>;
  /** At most `limit` (1..1000) tasks of this kind and one concurrency key run at once. @default none */
  concurrency?: { limit: number } | undefined;
  /**
   * At most `limit` (1..1000) tasks of this kind and one rate limit key start running (are
   * first claimed) in any sliding `periodMs` (1..86 400 000), across all processes (DESIGN
   * §17); the others wait, held. A start may carry its own. @default none
   */
  rateLimit?: RateLimit | undefined;
  /** Shorthand for `retry.maxAttempts` (the older name). */
  maxAttempts?: number;
  /** How MCP clients may call it (DESIGN §9b). @default 'optional' */
  taskSupport?: TaskSupport;
  run(ctx: TaskContext<Input>): Promise<Result>;
}

export interface TaskKind<Input = unknown, Result = unknown>
  extends Required<
    Omit<
      TaskKindOptions<Input, Result>,
      'ttlMs' | 'retry' | 'concurrency' | 'rateLimit' | 'maxAttempts'
    >
  > {
  ttlMs: number | undefined;
  retry: RetryPolicy;
  concurrency: { limit: number } | undefined;
  rateLimit: RateLimit | undefined;
}

/** Declares a kind of task; register it with the app (`createApp({ kinds })`). */
export function defineTaskKind<Input = unknown, Result = unknown>(
  options: TaskKindOptions<Input, Result>,
): TaskKind<Input, Result> {
  if (!/^[a-z][a-z0-9_.-]{0,63}$/.test(options.name))
    throw new Error(`bad task kind name ${JSON.stringify(options.name)}`);
  const name = `kind ${options.name}: retry.`;
  const retry = resolveRetry(
    DEFAULT_RETRY,
    { ...options.retry, maxAttempts: options.maxAttempts ?? options.retry?.maxAttempts },
    name,
  );
  const limit = options.concurrency?.limit;
  if (limit !== undefined && (!Number.isInteger(limit) || limit < 1 || limit > 1000))
    throw new Error(`kind ${options.name}: concurrency.limit must be an integer from 1 to 1000`);
  const rateLimit = options.rateLimit;
  if (rateLimit !== undefined) {
    const problem = rateLimitProblem(rateLimit, 'rateLimit');
    if (problem) throw new Error(`kind ${options.name}: ${problem}`);
  }
  const { maxAttempts: _shorthand, ...rest } = options;
  return Object.freeze({
    pollIntervalMs: 1_000,
    timeoutMs: 900_000,
    taskSupport: 'optional' as const,
    ...rest,
    retry: Object.freeze(retry),
    concurrency: limit === undefined ? undefined : Object.freeze({ limit }),
    rateLimit:
      rateLimit === undefined
        ? undefined
        : Object.freeze({ limit: rateLimit.limit, periodMs: rateLimit.periodMs }),
    ttlMs: options.ttlMs,
  });
}

/**
 * A failure a handler throws on purpose: the task fails with this code instead of
 * HANDLER_ERROR. Any error with an upper-case `code` property works the same way.
 */
export class TaskFailedError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'TaskFailedError';
  }
}

/**
 * A child task ended FAILED or CANCELLED (`child.result()`, DESIGN §16). A handler may catch it
 * and go on; uncaught, it fails the parent at once with CHILD_FAILED (the child's end is in the
 * journal: a retry would meet it again).
 */
export class ChildTaskError extends Error {
  readonly code = 'CHILD_FAILED';

  constructor(
    readonly childId: string,
    readonly status: TaskStatus,
    readonly error: { code: string; message: string } | null,
  ) {
    super(
      `Child task ${childId} ended ${status.toUpperCase()}${error ? ` (${error.code}: ${error.message})` : ''}.`,
    );
    this.name = 'ChildTaskError';
  }
}

const ajv = new Ajv({ allErrors: false, strict: false });
const compiled = new WeakMap<object, ValidateFunction>();

function describe(errors: ErrorObject[] | null | undefined): string {
  const first = errors?.[0];
  if (!first) return 'invalid';
  return `${first.instancePath || '(root)'} ${first.message ?? 'is invalid'}`;
}

/**
 * Validates `value` against a JSON Schema, compiling each schema object once.
 * @throws ServiceError BAD_USER_INPUT naming what is wrong
 */
export function validateAgainst(
  schema: Record<string, unknown>,
  value: unknown,
  what: string,
): void {
  let validate = compiled.get(schema);
  if (!validate) {
    try {
      validate = ajv.compile(schema);
    } catch (err) {
      throw new ServiceError(
        'BAD_USER_INPUT',
        `${what}: the schema itself is invalid (${(err as Error).message})`,
      );
    }
    compiled.set(schema, validate);
  }
  if (!validate(value))
    throw new ServiceError('BAD_USER_INPUT', `${what}: ${describe(validate.errors)}`);
}

export class KindRegistry {
  private readonly kinds = new Map<string, TaskKind<any, any>>();

  constructor(kinds: Iterable<TaskKind<any, any>> = []) {
    for (const kind of kinds) this.register(kind);
  }

  register(kind: TaskKind<any, any>): void {
    if (this.kinds.has(kind.name)) throw new Error(`task kind ${kind.name} is registered twice`);
    ajv.compile(kind.inputSchema); // a broken schema fails at boot, not at the first request
    this.kinds.set(kind.name, kind);
  }

  get(name: string): TaskKind<any, any> | undefined {
    return this.kinds.get(name);
  }

  /** @throws ServiceError BAD_USER_INPUT for an unknown kind */
  require(name: string): TaskKind<any, any> {
    const kind = this.kinds.get(name);
    if (!kind)
      throw new ServiceError('BAD_USER_INPUT', `Unknown task kind ${JSON.stringify(name)}.`);
    return kind;
  }

  names(): string[] {
    return [...this.kinds.keys()];
  }

  list(): TaskKind<any, any>[] {
    return [...this.kinds.values()].sort((a, b) => a.name.localeCompare(b.name));
  }
}
