import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import type { Principal } from '../../../auth/principal.js';
import { ServiceError } from '../../../errors.js';
import { answerThrown, MASKED_MESSAGE } from '../../../http/last-catch.js';
import { sendJson } from '../../../http/problem.js';
import type { TaskService } from '../../../tasks/service.js';
import { SERVER_INFO } from '../server.js';
import { RpcError, rpcErrorOf } from '../wire.js';
import { checkEnvelope, METHOD_NOT_FOUND, StatelessError } from './envelope.js';
import { listen } from './listen.js';
import { METHODS } from './methods.js';
import { SERVER_INFO_META } from './wire.js';

export interface StatelessRequest {
  tasks: TaskService;
  log: Logger;
  /** The principal the HTTP gate verified. */
  principal: Principal;
  /** Aborted when the process stops: waiting calls answer at once. */
  stopping: AbortSignal;
}

const idOf = (body: unknown) => {
  const id = (body as { id?: unknown } | null)?.id;
  return typeof id === 'string' || typeof id === 'number' ? id : null;
};

/**
 * Serves one request of MCP 2026-07-28 (DESIGN §9b): no session, its envelope checked, one
 * JSON-RPC answer carrying `resultType` and the server's identity in `_meta`. Errors use the
 * revision's codes and HTTP statuses; anything unexpected is -32603, masked and logged.
 */
export async function serveStateless(
  context: StatelessRequest,
  req: IncomingMessage,
  res: ServerResponse,
  body: unknown,
): Promise<void> {
  const id = idOf(body);
  const answerError = (status: number, code: number, message: string, data?: unknown) =>
    sendJson(res, status, {
      jsonrpc: '2.0',
      id,
      error: { code, message, ...(data === undefined ? {} : { data }) },
    });
  let method = '';
  try {
    const envelope = checkEnvelope(req, body);
    method = envelope.method;
    if (!('id' in (body as object))) {
      // A notification: this revision defines none from the client over HTTP; nothing to do.
      res.writeHead(202).end();
      return;
    }
    const aborted = new AbortController();
    res.once('close', () => aborted.abort());
    const call = { ...context, envelope, signal: aborted.signal };
    if (method === 'subscriptions/listen') return await listen(call, res);
    const run = METHODS[method];
    if (!run) {
      throw new StatelessError(METHOD_NOT_FOUND, `Method not found: ${method}`, undefined, 404);
    }
    const result = await run(call);
    const meta = (result._meta ?? {}) as Record<string, unknown>;
    sendJson(res, 200, {
      jsonrpc: '2.0',
      id,
      result: { ...result, _meta: { ...meta, [SERVER_INFO_META]: SERVER_INFO } },
    });
  } catch (err) {
    answerThrown(req, res, err, {
      log: context.log,
      where: 'the MCP face',
      context: { method },
      refuse: (_res, thrown) => {
        if (thrown instanceof StatelessError) {
          answerError(thrown.status, thrown.code, thrown.message, thrown.data);
        } else if (thrown instanceof RpcError || thrown instanceof ServiceError) {
          const rpc = rpcErrorOf(thrown, context.log, method);
          answerError(200, rpc.code, rpc.message, rpc.data);
        } else return false;
        return true;
      },
      mask: () => answerError(200, -32603, MASKED_MESSAGE),
    });
  }
}
