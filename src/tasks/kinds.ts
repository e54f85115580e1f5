import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { ServiceError } from '../errors.js';
import { type RateLimit, rateLimitProblem } from './flow-control.js';
import type { TaskContext } from './handler-context.js';
import { DEFAULT_RETRY, type RetryPolicy, resolveRetry } from './retry.js';
import type { TaskStatus } from './status.js';

/** What a handler is given (`ctx`), in a file of its own; importers of kinds.js keep it. */
export * from './handler-context.js';

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
