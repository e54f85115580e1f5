import type { CallToolResult, Task as McpTask } from '@modelcontextprotocol/sdk/types.js';
import { ErrorCode, RELATED_TASK_META_KEY } from '@modelcontextprotocol/sdk/types.js';
import type { Logger } from 'pino';
import { coerceError, ServiceError } from '../../errors.js';
import type { Task } from '../../tasks/task.js';
import { workMetadata } from '../../tasks/work-metadata.js';

/**
 * How the MCP face writes tasks, results and errors (DESIGN §9): the translation from the
 * domain's Task and ServiceError to what MCP 2025-11-25's tasks utility expects.
 */

/** A JSON-RPC error as it goes on the wire: the SDK sends `code` and `message` as they are. */
export class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: Record<string, unknown>,
  ) {
    super(message);
    this.name = 'RpcError';
  }
}

/** Unknown, expired, someone else's, or not a UUID: one answer for all, so nothing leaks. */
export const taskNotFound = () => new RpcError(ErrorCode.InvalidParams, 'Task not found.');

/** Server-error codes (JSON-RPC reserves -32000..-32099) for the §12 refusals, which clients may retry. */
export const RATE_LIMITED_CODE = -32029;
export const SERVICE_UNAVAILABLE_CODE = -32053;

/** What a task's `statusMessage` says on both revisions: the question, the failure, or its own. */
export function statusMessageOf(task: Task): string | null {
  if (task.status === 'input_required' && task.inputRequest) return task.inputRequest.message;
  if (task.status === 'failed' && task.error) return task.error.message;
  return task.statusMessage;
}

export function mcpTaskOf(task: Task): McpTask {
  const statusMessage = statusMessageOf(task);
  return {
    taskId: task.id,
    status: task.status,
    ...(statusMessage !== null ? { statusMessage } : {}),
    createdAt: task.createdAt.toISOString(),
    lastUpdatedAt: task.lastUpdatedAt.toISOString(),
    ttl: task.ttlMs,
    pollInterval: task.pollIntervalMs,
  };
}

/** Where a task's labels (DESIGN §15) travel: `tools/call`'s `_meta`, and every task result's. */
export const LABELS_META_KEY = 'taskhandle/labels';

/**
 * The `_meta` of a result carrying one task (MCP's Task has no room of its own): its labels
 * (DESIGN §15) and how its work is managed (§14: attempt, maxAttempts, priority, runAt, …).
 */
export function taskMeta(task: Task): Record<string, unknown> {
  return { ...workMetadata(task), [LABELS_META_KEY]: task.labels };
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

function failure(code: string, message: string, meta: CallToolResult['_meta']): CallToolResult {
  return {
    isError: true,
    content: [{ type: 'text', text: message }],
    structuredContent: { code, message },
    ...(meta ? { _meta: meta } : {}),
  };
}

/** What `tasks/result` answers for a final task: derived from the row alone, so the same every time. */
export function callToolResultOf(task: Task): CallToolResult {
  const meta = { [RELATED_TASK_META_KEY]: { taskId: task.id } };
  if (task.status === 'completed') {
    const result = task.result ?? null;
    return {
      content: [{ type: 'text', text: JSON.stringify(result) }],
      structuredContent: isRecord(result) ? result : { value: result },
      _meta: meta,
    };
  }
  if (task.status === 'failed') {
    const error = task.error ?? { code: 'HANDLER_ERROR', message: 'The task failed.' };
    return failure(error.code, error.message, meta);
  }
  return failure('CANCELLED', 'The task was cancelled.', meta);
}

/** A plain `tools/call` whose arguments the kind refuses: a tool error the model can read, not a protocol error. */
export function refusedCall(err: ServiceError): CallToolResult {
  return failure(err.code, err.message, undefined);
}

/**
 * The JSON-RPC error for whatever a handler threw: contract codes keep their message and say
 * their code in `data`; anything else is masked (-32603) and logged with its cause.
 */
export function rpcErrorOf(thrown: unknown, log: Logger, method: string): RpcError {
  if (thrown instanceof RpcError) return thrown;
  if (thrown instanceof ServiceError) {
    const data = { code: thrown.code };
    switch (thrown.code) {
      case 'NOT_FOUND':
        return taskNotFound();
      case 'RATE_LIMITED':
      case 'SERVICE_UNAVAILABLE': {
        const retryAfterMs = thrown.details?.retryAfterMs;
        const code = thrown.code === 'RATE_LIMITED' ? RATE_LIMITED_CODE : SERVICE_UNAVAILABLE_CODE;
        return new RpcError(code, thrown.message, {
          ...data,
          ...(typeof retryAfterMs === 'number' ? { retryAfterMs } : {}),
        });
      }
      case 'UNAUTHENTICATED':
      case 'FORBIDDEN':
        return new RpcError(ErrorCode.InvalidRequest, thrown.message, data);
      default:
        return new RpcError(ErrorCode.InvalidParams, thrown.message, data);
    }
  }
  log.error({ err: coerceError(thrown), method }, 'unexpected error in the MCP face');
  return new RpcError(ErrorCode.InternalError, 'Unexpected error.');
}
