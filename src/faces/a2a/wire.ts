import type { ServerResponse } from 'node:http';
import { formatSSEErrorEvent, formatSSEEvent } from '@a2a-js/sdk';
import { A2AError } from '@a2a-js/sdk/errors';
import { JsonRpcTransportHandler } from '@a2a-js/sdk/server';
import type { Logger } from 'pino';
import { coerceError } from '../../errors.js';

/** A comment line this often keeps proxies from closing a stream that waits for a person. */
const KEEPALIVE_MS = 15_000;

export interface JsonRpcReply {
  jsonrpc: string;
  id: string | number | null;
  result?: unknown;
  error?: unknown;
}

/** A JSON-RPC id as the reply must carry it: the request's, or null when it had none usable. */
export const rpcIdOf = (id: unknown): string | number | null =>
  typeof id === 'string' || typeof id === 'number' ? id : null;

/**
 * The JSON-RPC error reply for a failure: A2A errors as the SDK maps them; anything else
 * (which the handler should have masked already) logged and masked as -32603.
 */
export function rpcErrorOf(id: unknown, err: unknown, log: Logger): JsonRpcReply {
  if (err instanceof A2AError)
    return {
      jsonrpc: '2.0',
      id: rpcIdOf(id),
      error: JsonRpcTransportHandler.mapToJSONRPCError(err),
    };
  log.error({ err: coerceError(err) }, 'unexpected error in the A2A face');
  return { jsonrpc: '2.0', id: rpcIdOf(id), error: { code: -32603, message: MASKED } };
}

/** The message of the failures the handler masks. */
export const MASKED = 'Internal error.';

/**
 * A reply as sent. The handler masks its own failures as -32603 `MASKED`; another -32603 can
 * only come from the SDK decoding params that do not fit the method (a value whose string
 * conversion throws, say): that is the request's fault, so it is -32602, never the raw text.
 */
export function checkedReply(reply: JsonRpcReply, log: Logger): JsonRpcReply {
  const error = reply.error as { code?: unknown; message?: unknown } | undefined;
  if (error?.code !== -32603 || error.message === MASKED) return withArrays(reply);
  log.warn({ rpcError: error }, 'A2A params the SDK could not decode');
  const message = 'The params do not fit the method.';
  return { jsonrpc: '2.0', id: reply.id, error: { code: -32602, message } };
}

/**
 * Proto JSON leaves out empty lists; a task always says `artifacts` and `history`. In a
 * ListTasks answer `artifacts` stays as the SDK wrote it: written out with `includeArtifacts`
 * (under either of its names), absent without (A2A 1.0), not empty.
 */
function taskWithArrays(task: unknown, listed = false): unknown {
  if (task === null || typeof task !== 'object') return task;
  const { artifacts, history = [], ...rest } = task as Record<string, unknown>;
  if (listed)
    return artifacts === undefined ? { ...rest, history } : { ...rest, artifacts, history };
  return { ...rest, artifacts: artifacts ?? [], history };
}

/** A reply whose result is, or holds, tasks, with their empty lists written out. */
export function withArrays(reply: JsonRpcReply): JsonRpcReply {
  const result = reply.result as Record<string, unknown> | null | undefined;
  if (!result || typeof result !== 'object') return reply;
  if (Array.isArray(result.tasks)) {
    const tasks = result.tasks.map((task) => taskWithArrays(task, true));
    return { ...reply, result: { ...result, tasks } };
  }
  if ('task' in result)
    return { ...reply, result: { ...result, task: taskWithArrays(result.task) } };
  if ('status' in result && 'id' in result) return { ...reply, result: taskWithArrays(result) };
  return reply;
}

/** Resolves once `res` can take more, or has closed. */
const drained = (res: ServerResponse) =>
  new Promise<void>((resolve) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.once('drain', done);
    res.once('close', done);
  });

/**
 * Sends a JSON-RPC stream as Server-Sent Events, one response per `data:` line, waiting for
 * a slow reader rather than buffering. A failure once the stream has begun becomes an
 * `event: error` (already masked by the handler), and the stream ends.
 */
export async function sendStream(
  res: ServerResponse,
  first: IteratorResult<JsonRpcReply, void>,
  rest: AsyncIterator<JsonRpcReply, void>,
  id: unknown,
  log: Logger,
): Promise<void> {
  res.writeHead(200, {
    'content-type': 'text/event-stream',
    'cache-control': 'no-store',
    'x-accel-buffering': 'no',
  });
  res.flushHeaders();
  const keepalive = setInterval(() => res.write(': keepalive\n\n'), KEEPALIVE_MS);
  keepalive.unref();
  const write = async (text: string) => {
    if (!res.write(text)) await drained(res);
  };
  try {
    let next = first;
    while (!next.done && !res.destroyed) {
      await write(formatSSEEvent(withArrays(next.value)));
      next = await rest.next();
    }
  } catch (err) {
    if (!res.destroyed) await write(formatSSEErrorEvent(rpcErrorOf(id, err, log)));
  } finally {
    clearInterval(keepalive);
    await rest.return?.(); // releases the subscription if the client went away mid-stream
    res.end();
  }
}
