import { ClientError } from './errors.js';
import { TaskHandle } from './handle.js';
import { type ScheduleClient, scheduleClient } from './schedules.js';
import {
  type ClientTask,
  type InputOf,
  type KindMap,
  type ResultOf,
  STEP_FIELDS,
  TASK_FIELDS,
  type TaskStatus,
} from './task.js';
import { type TokenSource, Transport } from './transport.js';

export interface ClientOptions {
  /** The server's base URL, e.g. `http://127.0.0.1:4000`. */
  url: string;
  /** A bearer token, or a function returning the current one (asked before every request). */
  token?: TokenSource;
  /** How long one HTTP request may take. @default 30_000 */
  timeoutMs?: number;
}

/**
 * What `startTask` takes besides kind and input. Fields the server adds later pass through
 * as given.
 */
export interface StartOptions {
  /** 1..255 printable characters; the same key and request return the same task. */
  idempotencyKey?: string;
  /** Retention from creation, clamped by the server to its limits. */
  ttlMs?: number;
  /** Pushes every status change to this URL. */
  webhook?: { url: string; secret?: string; [field: string]: unknown };
  /**
   * While a task of yours with this kind and key has not started, this start replaces its input
   * and labels, moves it to `delayMs` from now (never past its first start + `maxDelayMs`) and
   * returns its handle: one task per burst, with the last input. Not with `idempotencyKey`,
   * `runAt` or `delayMs`.
   */
  debounce?: { key: string; delayMs: number; maxDelayMs?: number };
  [field: string]: unknown;
}

/** Which tasks `list` returns. Fields the server adds later pass through in `filter`. */
export interface ListFilter {
  /** Only tasks in these statuses. */
  status?: readonly TaskStatus[];
  /** Admins: another principal's tasks. */
  owner?: string;
  /** Tasks on the page. @default the server's (20) */
  first?: number;
  /** The `endCursor` of the page before. */
  after?: string;
  [field: string]: unknown;
}

export interface TaskList {
  tasks: ClientTask[];
  endCursor: string | null;
  hasNextPage: boolean;
}

export interface KindInfo {
  name: string;
  description: string;
  inputSchema: unknown;
}

/** A program's way to a taskhandle server. `Kinds` types inputs and results per kind. */
export interface TaskhandleClient<Kinds extends KindMap = KindMap> {
  readonly url: string;
  /** Starts a task and returns its handle once the task is stored. */
  start<Name extends string>(
    kind: Name,
    input: InputOf<Kinds, Name>,
    options?: StartOptions,
  ): Promise<TaskHandle<ResultOf<Kinds, Name>>>;
  /** A handle on a task by id, without asking the server. */
  handle<Result = unknown>(id: string): TaskHandle<Result>;
  /**
   * The task now; null when it is unknown, expired or not yours. With `steps`, its journal
   * too (`ClientTask.steps`).
   */
  get(id: string, options?: { signal?: AbortSignal; steps?: boolean }): Promise<ClientTask | null>;
  /**
   * Sends the signal `name` with `payload` to the task's handler (`ctx.waitForSignal`); the
   * first payload is kept, the same one again answers as the first did.
   * @throws ClientError SIGNAL_ALREADY_SENT for another payload; NOT_FOUND, TASK_TERMINAL,
   *   BAD_USER_INPUT (a payload the waiting handler's schema refuses)
   */
  signal(id: string, name: string, payload: unknown): Promise<ClientTask>;
  /** One page of your tasks (admins: `owner`'s), newest first. */
  list(filter?: ListFilter): Promise<TaskList>;
  /** The kinds the server runs. */
  kinds(): Promise<KindInfo[]>;
  /** Recurring work: each occurrence of a schedule's cron starts one task. */
  readonly schedules: ScheduleClient;
  /** One GraphQL operation over HTTP, for what the methods above do not cover. */
  request<T>(query: string, variables?: Record<string, unknown>): Promise<T>;
  /** Closes the WebSocket (following stops); HTTP needs no closing. */
  close(): Promise<void>;
}

/**
 * A client for the server at `url`.
 * ```ts
 * const client = createClient<{ export: typeof exportKind }>({ url, token });
 * const t = await client.start('export', { format: 'csv' }, { idempotencyKey: 'daily' });
 * const result = await t.result(); // typed as the kind's Result
 * ```
 */
export function createClient<Kinds extends KindMap = KindMap>(
  options: ClientOptions,
): TaskhandleClient<Kinds> {
  try {
    new URL(options.url);
  } catch (err) {
    throw new ClientError('BAD_USER_INPUT', `url ${JSON.stringify(options.url)} is not a URL`, {
      cause: err,
    });
  }
  const transport = new Transport(options.url, options.token, options.timeoutMs ?? 30_000);
  return {
    url: options.url,
    async start(kind, input, startOptions = {}) {
      const { startTask } = await transport.request<{ startTask: ClientTask<any> }>(
        `mutation($input: StartTaskInput!) { startTask(input: $input) { ${TASK_FIELDS} } }`,
        { input: { ...startOptions, kind, input } },
      );
      return new TaskHandle(startTask.id, transport, startTask);
    },
    handle: (id) => new TaskHandle(id, transport),
    async get(id, { signal, steps } = {}) {
      const { task } = await transport.request<{ task: ClientTask | null }>(
        `query($id: ID!) { task(id: $id) { ${TASK_FIELDS} ${steps ? STEP_FIELDS : ''} } }`,
        { id },
        signal,
      );
      return task;
    },
    async signal(id, name, payload) {
      const { signalTask } = await transport.request<{ signalTask: ClientTask }>(
        `mutation($id: ID!, $name: String!, $payload: JSON) {
          signalTask(id: $id, name: $name, payload: $payload) { ${TASK_FIELDS} } }`,
        { id, name, payload },
      );
      return signalTask;
    },
    async list(filter = {}) {
      const { status, owner, first, after, ...rest } = filter;
      // The arguments every server has travel as such; newer filters go in `filter`.
      const extra = Object.keys(rest).length > 0;
      const { tasks } = await transport.request<{
        tasks: {
          edges: Array<{ node: ClientTask }>;
          pageInfo: { endCursor: string | null; hasNextPage: boolean };
        };
      }>(
        `query($first: Int, $after: String, $status: [TaskStatus!], $owner: String${extra ? ', $filter: TaskFilter' : ''}) {
          tasks(first: $first, after: $after, status: $status, owner: $owner${extra ? ', filter: $filter' : ''}) {
            edges { node { ${TASK_FIELDS} } } pageInfo { endCursor hasNextPage } } }`,
        {
          first: first ?? null,
          after: after ?? null,
          status: status ?? null,
          owner: owner ?? null,
          ...(extra ? { filter: rest } : {}),
        },
      );
      return {
        tasks: tasks.edges.map((edge) => edge.node),
        endCursor: tasks.pageInfo.endCursor,
        hasNextPage: tasks.pageInfo.hasNextPage,
      };
    },
    async kinds() {
      const { taskKinds } = await transport.request<{ taskKinds: KindInfo[] }>(
        '{ taskKinds { name description inputSchema } }',
      );
      return taskKinds;
    },
    schedules: scheduleClient(transport),
    request: (query, variables) => transport.request(query, variables),
    close: () => transport.close(),
  };
}
