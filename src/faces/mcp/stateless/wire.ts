import type {
  CallToolResultV2,
  CreateTaskResultV2,
  DetailedTaskV2,
  InputRequestsV2,
} from '@modelcontextprotocol/ext-tasks/core/v2';
import type { Task } from '../../../tasks/task.js';
import { INTERNAL_ERROR } from '../core/errors.js';
import { toolResultOf as coreToolResultOf, statusMessageOf, taskMeta } from '../core/results.js';
import { isRecord } from '../core/rpc.js';

/**
 * How the 2026-07-28 face writes tasks (DESIGN §9b): the io.modelcontextprotocol/tasks
 * extension's flat handle and DetailedTask, and its mapping of outcomes — a tool that ran and
 * reported a failure is `completed` with `isError`; `failed` is kept for failures outside the
 * tool, carried as a JSON-RPC error.
 */

export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';
export const SERVER_INFO_META = 'io.modelcontextprotocol/serverInfo';

/**
 * Failure codes the platform records outside a handler's own code path: a worker lost for good,
 * or the server failing around the tool. Every other code is the tool's own answer.
 */
const OUTSIDE_THE_TOOL = new Set(['WORKER_LOST', 'INTERNAL_SERVER_ERROR']);

/** Whether a failed task failed outside the tool (extension status `failed`). */
export const failedOutsideTheTool = (task: Task): boolean =>
  task.status === 'failed' && OUTSIDE_THE_TOOL.has(task.error?.code ?? '');

/**
 * The tool's result for a final task (the core's, a string result as its own text): a result
 * of its own, so it says `resultType` too.
 */
export function toolResultOf(task: Task): CallToolResultV2 {
  return { resultType: 'complete', ...coreToolResultOf(task, true) } as CallToolResultV2;
}

/** The JSON-RPC error of a task that failed outside the tool. */
export function rpcErrorOfTask(task: Task): { code: number; message: string; data: unknown } {
  const error = task.error ?? { code: 'INTERNAL_SERVER_ERROR', message: 'The task failed.' };
  return { code: INTERNAL_ERROR, message: error.message, data: { code: error.code } };
}

/** The extension's status: a failure inside the tool reads as `completed`. */
function statusOf(task: Task): DetailedTaskV2['status'] {
  return task.status === 'failed' && !failedOutsideTheTool(task) ? 'completed' : task.status;
}

/** The handle every answer about a task starts from. */
function handleOf(task: Task) {
  const statusMessage = statusMessageOf(task);
  return {
    taskId: task.id,
    status: statusOf(task),
    ...(statusMessage !== null ? { statusMessage } : {}),
    createdAt: task.createdAt.toISOString(),
    lastUpdatedAt: task.lastUpdatedAt.toISOString(),
    ttlMs: task.ttlMs,
    pollIntervalMs: task.pollIntervalMs,
    _meta: taskMeta(task),
  };
}

/** `tools/call`'s answer when it starts a task: the flat handle, no payloads. */
export function createTaskResultOf(task: Task): CreateTaskResultV2 {
  return { resultType: 'task', ...handleOf(task) } as CreateTaskResultV2;
}

/** Every outstanding question as an elicitation request, keyed by its input key, in asked order. */
function inputRequestsOf(task: Task): InputRequestsV2 {
  const requests: Record<string, unknown> = {};
  for (const request of task.inputRequests) {
    const schema = isRecord(request.schema) ? request.schema : { type: 'object', properties: {} };
    requests[request.key] = {
      method: 'elicitation/create',
      params: { mode: 'form', message: request.message, requestedSchema: schema },
    };
  }
  return requests as InputRequestsV2;
}

/** What `tasks/get` and `notifications/tasks` carry: the handle with its status's payload. */
export function detailedTaskOf(task: Task): DetailedTaskV2 {
  const handle = handleOf(task);
  if (task.status === 'input_required') {
    return { ...handle, inputRequests: inputRequestsOf(task) } as DetailedTaskV2;
  }
  if (failedOutsideTheTool(task))
    return { ...handle, error: rpcErrorOfTask(task) } as DetailedTaskV2;
  if (handle.status === 'completed')
    return { ...handle, result: toolResultOf(task) } as DetailedTaskV2;
  return handle as DetailedTaskV2;
}
