import type { ElicitRequestFormParams, ElicitResult } from '@modelcontextprotocol/sdk/types.js';
import { RELATED_TASK_META_KEY } from '@modelcontextprotocol/sdk/types.js';
import type { Logger } from 'pino';
import { coerceError, ServiceError } from '../../../errors.js';
import type { Actor, TaskService } from '../../../tasks/service.js';
import { isTerminal } from '../../../tasks/status.js';
import type { InputRequest, Task } from '../../../tasks/task.js';
import {
  CONNECTION_CLOSED,
  INVALID_REQUEST,
  RpcError,
  SERVICE_UNAVAILABLE_CODE,
  taskNotFound,
} from './errors.js';

/** Sends one `elicitation/create` on the waiting request's own response stream. */
export type Ask = (
  params: ElicitRequestFormParams,
  signal: AbortSignal,
  timeoutMs: number,
) => Promise<ElicitResult>;

export interface AwaitFinal {
  tasks: TaskService;
  actor: Actor;
  taskId: string;
  /** The JSON-RPC request's signal: aborted when the client cancels or the session closes. */
  signal: AbortSignal;
  /** Aborted when the process stops: the wait answers at once, so the client can ask elsewhere. */
  stopping: AbortSignal;
  /** Present when this client may be asked: it declared form elicitation and holds tasks:write. */
  ask: Ask | undefined;
  /** Epoch ms at which the caller's token expires, if it does. */
  tokenExpiresAt: number | undefined;
  log: Logger;
}

const FORM_TYPES = new Set(['string', 'number', 'integer', 'boolean']);

/** MCP's form schema: an object whose properties are all plain strings, numbers, integers or booleans. */
export function isFlatForm(schema: unknown): schema is ElicitRequestFormParams['requestedSchema'] {
  if (schema === null || typeof schema !== 'object' || Array.isArray(schema)) return false;
  const { type, properties } = schema as { type?: unknown; properties?: unknown };
  if (type !== 'object' || properties === null || typeof properties !== 'object') return false;
  return Object.values(properties).every(
    (property) =>
      property !== null &&
      typeof property === 'object' &&
      FORM_TYPES.has((property as { type?: unknown }).type as string),
  );
}

/**
 * Waits on the task's event stream (never polling the store) until it is final, and returns
 * it. While the task waits for input and the client can be asked, asks its question; an
 * accepted answer is stored as `provideTaskInput` stores it, one failing the schema is asked
 * again, a declined or cancelled one stores nothing and the wait goes on.
 * @throws RpcError "Task not found." when the task is not the caller's or is gone
 */
export async function awaitFinal(wait: AwaitFinal): Promise<Task> {
  const { tasks, actor, taskId, signal, stopping } = wait;
  const stream = await tasks.subscriptions.toTask(actor, taskId, wait.tokenExpiresAt);
  const stop = () => void stream.return?.();
  signal.addEventListener('abort', stop, { once: true });
  stopping.addEventListener('abort', stop, { once: true });
  if (stopping.aborted) stop();
  let question: AbortController | undefined;
  let asked: InputRequest | undefined;
  try {
    for await (const task of stream) {
      if (isTerminal(task.status)) return task;
      const request = task.status === 'input_required' ? task.inputRequest : null;
      if (request && (request.key !== asked?.key || request.message !== asked.message)) {
        question?.abort();
        asked = request;
        question = new AbortController();
        if (wait.ask && isFlatForm(request.schema))
          void askUntilSettled(wait, task, question.signal);
      } else if (!request) {
        question?.abort();
        question = undefined;
        asked = undefined;
      }
    }
  } finally {
    question?.abort();
    signal.removeEventListener('abort', stop);
    stopping.removeEventListener('abort', stop);
  }
  if (signal.aborted) throw new RpcError(CONNECTION_CLOSED, 'Request was cancelled.');
  if (stopping.aborted) {
    throw new RpcError(SERVICE_UNAVAILABLE_CODE, 'The server is stopping; ask again.', {
      code: 'SERVICE_UNAVAILABLE',
    });
  }
  if (wait.tokenExpiresAt !== undefined && wait.tokenExpiresAt <= Date.now()) {
    throw new RpcError(
      INVALID_REQUEST,
      'The bearer token expired while waiting for the task; ask again with a fresh token.',
    );
  }
  throw taskNotFound(); // expired or deleted while waiting
}

/** Asks `task`'s question until an answer is stored, declined, or no longer wanted. Never throws. */
async function askUntilSettled(wait: AwaitFinal, task: Task, signal: AbortSignal): Promise<void> {
  const request = task.inputRequest as InputRequest;
  const params: ElicitRequestFormParams = {
    mode: 'form',
    message: request.message,
    requestedSchema: request.schema as ElicitRequestFormParams['requestedSchema'],
    _meta: { [RELATED_TASK_META_KEY]: { taskId: task.id } },
  };
  const timeoutMs = Math.max(1, Math.min(2 ** 31 - 1, task.expiresAt.getTime() - Date.now()));
  while (!signal.aborted) {
    let answer: ElicitResult;
    try {
      answer = await (wait.ask as Ask)(params, signal, timeoutMs);
    } catch (err) {
      if (!signal.aborted) wait.log.debug({ err: coerceError(err) }, 'elicitation not answered');
      return;
    }
    if (answer.action !== 'accept' || signal.aborted) return;
    try {
      await wait.tasks.provideInput(wait.actor, task.id, request.key, answer.content ?? {});
      return;
    } catch (err) {
      if (err instanceof ServiceError && err.code === 'BAD_USER_INPUT') continue;
      if (!(err instanceof ServiceError)) {
        wait.log.error({ err: coerceError(err) }, 'storing an elicited answer failed');
      }
      return; // the task moved on: the event stream says where
    }
  }
}
