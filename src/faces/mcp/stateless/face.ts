import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import type { Principal } from '../../../auth/principal.js';
import { ServiceError } from '../../../errors.js';
import { answerThrown, MASKED_MESSAGE } from '../../../http/last-catch.js';
import { sendJson } from '../../../http/problem.js';
import type { TaskService } from '../../../tasks/service.js';
import { INTERNAL_ERROR, METHOD_NOT_FOUND, RpcError, rpcErrorOf } from '../core/errors.js';
import { idOf, sendRpcError } from '../core/rpc.js';
import { Shutdown } from '../core/shutdown.js';
import { SERVER_INFO } from '../core/tools.js';
import { checkEnvelope } from './envelope.js';
import { listen } from './listen.js';
import { METHODS } from './methods.js';
import { SERVER_INFO_META } from './wire.js';

export interface StatelessFaceOptions {
  tasks: TaskService;
  log: Logger;
}

/**
 * MCP 2026-07-28 (DESIGN §9b): no session; each request's envelope checked, one JSON-RPC
 * answer carrying `resultType` and the server's identity in `_meta`. Errors use the
 * revision's codes and HTTP statuses; anything unexpected is -32603, masked and logged. The
 * door (handler.ts) has checked the origin, the token and the scopes, and read the body.
 */
export function createStatelessFace({ tasks, log }: StatelessFaceOptions) {
  /** Waiting calls, answered when the face closes. */
  const shutdown = new Shutdown();

  async function serve(
    req: IncomingMessage,
    res: ServerResponse,
    principal: Principal,
    body: unknown,
  ): Promise<void> {
    const id = idOf(body);
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
      const call = { tasks, log, principal, stopping: shutdown.signal, envelope };
      if (method === 'subscriptions/listen')
        return await listen({ ...call, signal: aborted.signal }, res);
      const run = METHODS[method];
      if (!run) {
        throw new RpcError(METHOD_NOT_FOUND, `Method not found: ${method}`, undefined, 404);
      }
      const result = await run({ ...call, signal: aborted.signal });
      const meta = (result._meta ?? {}) as Record<string, unknown>;
      sendJson(res, 200, {
        jsonrpc: '2.0',
        id,
        result: { ...result, _meta: { ...meta, [SERVER_INFO_META]: SERVER_INFO } },
      });
    } catch (err) {
      answerThrown(req, res, err, {
        log,
        where: 'the MCP face',
        context: { method },
        // Refusals are JSON-RPC errors of this revision, with the statuses it gives them.
        refuse: (response, thrown) => {
          if (!(thrown instanceof RpcError || thrown instanceof ServiceError)) return false;
          const rpc = rpcErrorOf(thrown, log, method);
          sendRpcError(response, rpc.status, id, rpc);
          return true;
        },
        mask: (response) =>
          sendRpcError(response, 200, id, { code: INTERNAL_ERROR, message: MASKED_MESSAGE }),
      });
    }
  }

  return {
    /** Serves one request, followed until it settles so closing can answer it. */
    serve: (req: IncomingMessage, res: ServerResponse, principal: Principal, body: unknown) =>
      shutdown.track(serve(req, res, principal, body)),
    /** Answers every waiting call at once. */
    close: () => shutdown.begin(),
  };
}
