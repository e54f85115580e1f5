import type { ServerResponse } from 'node:http';
import { coerceError, ServiceError } from '../../../errors.js';
import type { Task } from '../../../tasks/task.js';
import { isTaskId } from '../../../tasks/validation.js';
import { callerOf } from '../core/caller.js';
import { INVALID_PARAMS, RpcError } from '../core/errors.js';
import { taskMeta } from '../core/results.js';
import { type Call, declaresTasks, needsTasks } from './methods.js';
import { detailedTaskOf } from './wire.js';

const SUBSCRIPTION_ID = 'io.modelcontextprotocol/subscriptionId';
/** Tasks one stream may follow. */
export const MAX_LISTENED_TASKS = 100;

/**
 * `subscriptions/listen` (DESIGN §9b): an SSE response that stays open, acknowledges first
 * which of the requested tasks it follows (the caller's own, others are left out alike), then
 * carries `notifications/tasks` with the full DetailedTask on every change — from the same
 * events as GraphQL's `taskUpdated`. It ends when the client leaves, or with an empty result
 * when the process stops. No other notification type is offered, so none is sent.
 */
export async function listen(call: Call, res: ServerResponse): Promise<void> {
  const { envelope, tasks } = call;
  const filter = envelope.params.notifications;
  if (filter === null || typeof filter !== 'object' || Array.isArray(filter)) {
    throw new RpcError(INVALID_PARAMS, 'notifications must be an object.');
  }
  const taskIds = (filter as { taskIds?: unknown }).taskIds;
  if (taskIds !== undefined) {
    if (!Array.isArray(taskIds) || taskIds.some((id) => typeof id !== 'string')) {
      throw new RpcError(INVALID_PARAMS, 'notifications.taskIds must be a list of ids.');
    }
    if (taskIds.length > MAX_LISTENED_TASKS) {
      throw new RpcError(
        INVALID_PARAMS,
        `A stream follows at most ${MAX_LISTENED_TASKS} tasks; open another for the rest.`,
      );
    }
    if (!declaresTasks(envelope)) throw needsTasks();
  }

  const actor = callerOf(call.principal);
  const streams: { id: string; stream: AsyncIterableIterator<Task> }[] = [];
  for (const id of new Set((taskIds ?? []) as string[])) {
    if (!isTaskId(id)) continue;
    try {
      streams.push({
        id,
        stream: await tasks.subscriptions.toTask(actor, id, call.principal.expiresAt),
      });
    } catch (err) {
      if (!(err instanceof ServiceError && err.code === 'NOT_FOUND')) throw err;
    }
  }

  const meta = { [SUBSCRIPTION_ID]: envelope.id };
  const send = (message: Record<string, unknown>) =>
    res.write(`event: message\ndata: ${JSON.stringify({ jsonrpc: '2.0', ...message })}\n\n`);
  res.writeHead(200, {
    'content-type': 'text/event-stream',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
  });
  send({
    method: 'notifications/subscriptions/acknowledged',
    params: { notifications: { taskIds: streams.map((s) => s.id) }, _meta: meta },
  });

  const stop = () => {
    for (const { stream } of streams) void stream.return?.();
  };
  const ended = new Promise<void>((resolve) => {
    res.once('close', resolve);
    call.stopping.addEventListener('abort', () => resolve(), { once: true });
    if (call.stopping.aborted) resolve();
  });
  const pumps = streams.map(async ({ stream }) => {
    try {
      for await (const task of stream) {
        send({
          method: 'notifications/tasks',
          params: { ...detailedTaskOf(task), _meta: { ...taskMeta(task), ...meta } },
        });
      }
    } catch (err) {
      call.log.warn({ err: coerceError(err) }, 'a task stream of subscriptions/listen failed');
    }
  });
  await ended;
  stop();
  await Promise.allSettled(pumps);
  if (!res.writableEnded && !res.destroyed) {
    send({ id: envelope.id, result: { resultType: 'complete', _meta: meta } });
    res.end();
  }
}
