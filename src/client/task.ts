/** The five statuses of §3. */
export type TaskStatus = 'WORKING' | 'INPUT_REQUIRED' | 'COMPLETED' | 'CANCELLED' | 'FAILED';

/** A question a task waits on: answer it with `answer(key, value)`. */
export interface ClientInputRequest {
  key: string;
  message: string;
  /** The JSON Schema the answer must meet. */
  schema: unknown;
}

/** A task as its owner sees it, one version of it. */
export interface ClientTask<Result = unknown> {
  id: string;
  kind: string;
  status: TaskStatus;
  statusMessage: string | null;
  /** 0..1 once the handler reports it. */
  progress: number | null;
  createdAt: string;
  lastUpdatedAt: string;
  ttlMs: number;
  expiresAt: string;
  /** How long a poller should wait before asking again. */
  pollIntervalMs: number;
  /** 1 at creation, +1 on every change. */
  version: number;
  input: unknown;
  /** Set when COMPLETED. */
  result: Result | null;
  /** Set when FAILED. */
  error: { code: string; message: string } | null;
  /** Set when INPUT_REQUIRED: the first outstanding question. */
  inputRequest: ClientInputRequest | null;
  /** Every outstanding question, in the order the task asked them (empty unless INPUT_REQUIRED). */
  inputRequests: ClientInputRequest[];
  /** Runs started so far (0 before the first), and the most there may be. */
  attempt: number;
  maxAttempts: number;
  /** Set while the task waits for its time or its next attempt. */
  runAt: string | null;
  /** The error of the last failed attempt, kept while retrying. */
  lastError: { code: string; message: string } | null;
  /** Why it waits to be claimed, while it does; `statusMessage` says more. */
  heldBecause: 'CONCURRENCY' | 'RATE_LIMIT' | 'TIME' | null;
  /** The key its rate limit counts by, as given (null: the owner), and that limit, if any. */
  rateLimitKey: string | null;
  rateLimit: { limit: number; periodMs: number } | null;
  /** What the owner said the task is for, set at start. */
  labels: Record<string, string>;
  /** The task whose handler started this one (`ctx.startChild`), if any. */
  parentId: string | null;
  /** The task's journal, when asked for (`get(id, { steps: true })`). */
  steps?: ClientStep[];
}

/** The states of a journal entry: a step, a wait (sleep, signal) or a child. */
export type StepState =
  | 'RUNNING'
  | 'COMPLETED'
  | 'FAILED'
  | 'SLEEPING'
  | 'WAITING_SIGNAL'
  | 'WAITING_CHILD';

/** One entry of a task's journal, in the order the entries first ran. */
export interface ClientStep {
  name: string;
  state: StepState;
  /** Runs of the step's function (0 for a wait not yet ended). */
  attempts: number;
  startedAt: string;
  endedAt: string | null;
  /** A sleep, or a signal wait with a timeout: when it wakes. */
  wakeAt: string | null;
  /** The child task of a `startChild` step. */
  childId: string | null;
  /** Owner only: the URL an outside system may POST the signal to, while the task waits. */
  signalUrl: string | null;
  error: { code: string; message: string } | null;
  /** Owner only: what the step returned. */
  result: unknown;
}

/** The fields every query of the client selects: everything the owner may see. */
export const TASK_FIELDS = `id kind status statusMessage progress createdAt lastUpdatedAt ttlMs
  expiresAt pollIntervalMs version input result error { code message }
  inputRequest { key message schema } inputRequests { key message schema } attempt maxAttempts runAt lastError { code message }
  heldBecause rateLimitKey rateLimit { limit periodMs } labels parentId`;

/** A task's journal, as `get(id, { steps: true })` selects it. */
export const STEP_FIELDS =
  'steps { name state attempts startedAt endedAt wakeAt childId signalUrl error { code message } result }';

export const isTerminal = (status: TaskStatus): boolean =>
  status === 'COMPLETED' || status === 'FAILED' || status === 'CANCELLED';

/**
 * What a program knows of a kind's types: the kind itself (`typeof myKind`, from
 * `defineTaskKind<Input, Result>`) or `{ input; result }` written out.
 */
export type KindTypes =
  | { run(ctx: never): Promise<unknown> }
  | { input?: unknown; result?: unknown };

/** Kind name → its types, for `createClient<Kinds>()`. */
export type KindMap = { [name: string]: KindTypes };

type InputOfKind<T> = T extends { run(ctx: { readonly input: infer I }): Promise<unknown> }
  ? I
  : T extends { input?: infer I }
    ? I
    : unknown;
type ResultOfKind<T> = T extends { run(ctx: never): Promise<infer R> }
  ? R
  : T extends { result?: infer R }
    ? R
    : unknown;

/** The input `kind` takes, when the map knows it. */
export type InputOf<Kinds, Name> = Name extends keyof Kinds ? InputOfKind<Kinds[Name]> : unknown;
/** The result `kind` gives, when the map knows it. */
export type ResultOf<Kinds, Name> = Name extends keyof Kinds ? ResultOfKind<Kinds[Name]> : unknown;
