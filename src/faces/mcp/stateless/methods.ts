import { ElicitResultV2Schema } from '@modelcontextprotocol/ext-tasks/core/v2';
import type { Logger } from 'pino';
import type { Principal } from '../../../auth/principal.js';
import { ServiceError } from '../../../errors.js';
import type { Actor, TaskService } from '../../../tasks/service.js';
import type { Task } from '../../../tasks/task.js';
import { isTaskId } from '../../../tasks/validation.js';
import { awaitFinal } from '../core/await-final.js';
import { callerOf } from '../core/caller.js';
import { INVALID_PARAMS, RpcError, taskNotFound } from '../core/errors.js';
import { toolFailure } from '../core/results.js';
import { kindNamed, toolsOf } from '../core/tools.js';
import { type Envelope, MISSING_CLIENT_CAPABILITY, SUPPORTED_VERSIONS } from './envelope.js';
import { ARGUMENTS_KEY, askForArguments, gatheredArguments } from './gather.js';
import {
  createTaskResultOf,
  detailedTaskOf,
  failedOutsideTheTool,
  rpcErrorOfTask,
  TASKS_EXTENSION,
  toolResultOf,
} from './wire.js';

/** What a method of the stateless face gets besides its envelope. */
export interface Call {
  tasks: TaskService;
  log: Logger;
  principal: Principal;
  envelope: Envelope;
  /** Aborted when the client goes away. */
  signal: AbortSignal;
  /** Aborted when the process stops. */
  stopping: AbortSignal;
}

export type Method = (call: Call) => Promise<Record<string, unknown>>;

/** §9b: what `server/discover` announces. */
export const CAPABILITIES = { tools: {}, extensions: { [TASKS_EXTENSION]: {} } };

/** Whether this request declares the tasks extension in its `_meta` capabilities. */
export function declaresTasks(envelope: Envelope): boolean {
  const extensions = envelope.capabilities.extensions;
  return (
    extensions !== null &&
    typeof extensions === 'object' &&
    typeof (extensions as Record<string, unknown>)[TASKS_EXTENSION] === 'object'
  );
}

/** -32021 naming the extension, for a request that needs it and did not declare it. */
export const needsTasks = () =>
  new RpcError(
    MISSING_CLIENT_CAPABILITY,
    `Missing required client capability: the ${TASKS_EXTENSION} extension.`,
    { requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } } },
    400,
  );

const actorOf = (call: Call): Actor => callerOf(call.principal);

/** The caller's task named by `params.taskId`, once the request has declared the extension. */
async function ownTask(call: Call): Promise<Task> {
  if (!declaresTasks(call.envelope)) throw needsTasks();
  const taskId = call.envelope.params.taskId;
  if (typeof taskId !== 'string' || !isTaskId(taskId)) throw taskNotFound();
  const task = await call.tasks.get(actorOf(call), taskId);
  if (!task) throw taskNotFound();
  return task;
}

/** The finished tool result of a task the request waited for. */
function finished(task: Task): Record<string, unknown> {
  if (failedOutsideTheTool(task)) {
    const error = rpcErrorOfTask(task);
    throw new RpcError(error.code, error.message, error.data);
  }
  return toolResultOf(task);
}

/** Whether the call carries an answer (any) to the arguments it was asked for: never ask twice. */
const answered = (responses: unknown) =>
  responses !== null && typeof responses === 'object' && ARGUMENTS_KEY in responses;

const discover: Method = async () => ({
  resultType: 'complete',
  supportedVersions: SUPPORTED_VERSIONS,
  capabilities: CAPABILITIES,
  ttlMs: 0,
  cacheScope: 'private',
});

const listTools: Method = async ({ tasks }) => ({
  resultType: 'complete',
  // §9b: each tool says how its kind may be called.
  tools: toolsOf(tasks.listKinds(), (kind) => kind.taskSupport),
  ttlMs: 0,
  cacheScope: 'private',
});

const callTool: Method = async (call) => {
  const { tasks, envelope } = call;
  const { name, arguments: given, inputResponses } = envelope.params;
  const kind = kindNamed(tasks.listKinds(), name);
  const asTask = declaresTasks(envelope) && kind.taskSupport !== 'forbidden';
  if (kind.taskSupport === 'required' && !asTask) throw needsTasks();
  const input = gatheredArguments(given ?? {}, inputResponses);
  if (!answered(inputResponses)) {
    const ask = askForArguments(kind, input, envelope.capabilities);
    if (ask) return ask;
  }
  let task: Task;
  try {
    task = (await tasks.start(actorOf(call), { kind: kind.name, input })).task;
  } catch (err) {
    // Arguments the kind refuses are a tool error the model can read, nothing stored.
    if (err instanceof ServiceError && err.code === 'BAD_USER_INPUT') {
      return { resultType: 'complete', ...toolFailure(err.code, err.message) };
    }
    throw err;
  }
  if (asTask) return createTaskResultOf(task);
  const final = await awaitFinal({
    tasks,
    actor: actorOf(call),
    taskId: task.id,
    signal: call.signal,
    stopping: call.stopping,
    ask: undefined, // this revision sends no requests to the client: it polls tasks/get instead
    tokenExpiresAt: call.principal.expiresAt,
    log: call.log,
  });
  return finished(final);
};

const getTask: Method = async (call) => ({
  resultType: 'complete',
  ...detailedTaskOf(await ownTask(call)),
});

/**
 * Answers the outstanding questions `inputResponses` names, each as `provideTaskInput` does,
 * in the order they were asked; keys not outstanding, declined or cancelled answers and values
 * failing their schema store nothing (the question stays outstanding).
 */
const updateTask: Method = async (call) => {
  const task = await ownTask(call);
  const responses = call.envelope.params.inputResponses;
  if (responses === null || typeof responses !== 'object' || Array.isArray(responses)) {
    throw new RpcError(INVALID_PARAMS, 'inputResponses must be an object.');
  }
  for (const { key } of task.inputRequests) {
    const answer = Object.hasOwn(responses, key)
      ? (responses as Record<string, unknown>)[key]
      : undefined;
    const parsed = answer === undefined ? undefined : ElicitResultV2Schema.safeParse(answer);
    if (!parsed?.success || parsed.data.action !== 'accept') continue;
    try {
      await call.tasks.provideInput(actorOf(call), task.id, key, parsed.data.content ?? {});
    } catch (err) {
      const moved = ['BAD_USER_INPUT', 'NOT_AWAITING_INPUT', 'TASK_TERMINAL'];
      if (!(err instanceof ServiceError && moved.includes(err.code))) throw err;
    }
  }
  return { resultType: 'complete' };
};

/** Cancels, and acknowledges alike whether the task was active or already final. */
const cancelTask: Method = async (call) => {
  const task = await ownTask(call);
  try {
    await call.tasks.cancel(actorOf(call), task.id);
  } catch (err) {
    if (!(err instanceof ServiceError && err.code === 'TASK_TERMINAL')) throw err;
  }
  return { resultType: 'complete' };
};

/** The methods this revision serves besides `subscriptions/listen`; anything else is -32601. */
export const METHODS: Record<string, Method> = {
  'server/discover': discover,
  'tools/list': listTools,
  'tools/call': callTool,
  'tasks/get': getTask,
  'tasks/update': updateTask,
  'tasks/cancel': cancelTask,
};
