import type { IncomingMessage, ServerResponse } from 'node:http';
import { JsonRpcTransportHandler, validateVersion } from '@a2a-js/sdk/server';
import type { Logger } from 'pino';
import { type Principal, SCOPES } from '../../auth/principal.js';
import type { TokenVerifier } from '../../auth/tokens.js';
import { coerceError, ServiceError } from '../../errors.js';
import { PayloadTooLarge, readBody, sendTooLarge } from '../../http/body.js';
import { BearerRefusal, bearerChallenge, requireBearer } from '../../http/challenge.js';
import { sendJson, sendProblem } from '../../http/problem.js';
import type { RouteHandler } from '../../http/server.js';
import type { TaskService } from '../../tasks/service.js';
import { A2A_PATH, AGENT_CARD_PATH, baseUrlOf } from './card.js';
import { Caller, callContext } from './context.js';
import { TaskRequestHandler } from './handler.js';
import { noPushConfigs, type PushConfigs } from './push.js';
import {
  checkedReply,
  type JsonRpcReply,
  MASKED,
  rpcErrorOf,
  rpcIdOf,
  sendStream,
} from './wire.js';

export interface A2AOptions {
  tasks: TaskService;
  verifier: TokenVerifier;
  log: Logger;
  /** Push notification configs; without them the four methods answer -32003. */
  push?: PushConfigs;
}

/** The scope each method needs (DESIGN §10); any other method needs a valid token only. */
const SCOPE_OF: Readonly<Record<string, string>> = {
  SendMessage: SCOPES.write,
  SendStreamingMessage: SCOPES.write,
  CancelTask: SCOPES.write,
  CreateTaskPushNotificationConfig: SCOPES.write,
  DeleteTaskPushNotificationConfig: SCOPES.write,
  GetTask: SCOPES.read,
  ListTasks: SCOPES.read,
  SubscribeToTask: SCOPES.read,
  GetTaskPushNotificationConfig: SCOPES.read,
  ListTaskPushNotificationConfigs: SCOPES.read,
};

/** JSON-RPC 2.0's own codes, for what fails before the A2A transport sees the request. */
const PARSE_ERROR = -32700;
const INVALID_REQUEST = -32600;
/** Statuses for refusals that are the HTTP layer's to say (DESIGN §12). */
const HTTP_STATUS_OF: Readonly<Record<string, number>> = {
  RATE_LIMITED: 429,
  TOO_MANY_SUBSCRIPTIONS: 429,
  SERVICE_UNAVAILABLE: 503,
  UNSUPPORTED_MEDIA_TYPE: 415,
};
const JSON_TYPES = ['application/json', 'application/a2a+json'];

const rpcError = (id: unknown, code: number, message: string): JsonRpcReply => ({
  jsonrpc: '2.0',
  id: rpcIdOf(id),
  error: { code, message },
});

/** A refusal the HTTP layer answers: problem+json, with Retry-After for the limits. */
function sendRefusal(res: ServerResponse, err: ServiceError): void {
  const headers: Record<string, string> = bearerChallenge(err);
  const retryAfterMs = err.details?.retryAfterMs;
  if (err.code === 'RATE_LIMITED' || err.code === 'SERVICE_UNAVAILABLE') {
    const ms = typeof retryAfterMs === 'number' && retryAfterMs > 0 ? retryAfterMs : 1000;
    headers['retry-after'] = String(Math.ceil(ms / 1000));
  }
  const status =
    err.code === 'UNAUTHENTICATED'
      ? 401
      : err.code === 'FORBIDDEN'
        ? 403
        : HTTP_STATUS_OF[err.code];
  sendProblem(res, status ?? 400, err.code, err.message, headers);
}

/**
 * The A2A face (DESIGN §10): the agent card, and JSON-RPC on `POST /a2a` through the SDK's
 * transport over our own request handler. The token is checked before the body is read and
 * the method's scope before the SDK parses it; a request without `A2A-Version: 1.0` counts
 * as 0.3, which is not served.
 */
export function createA2AHandler(options: A2AOptions): RouteHandler {
  const { tasks, verifier, log } = options;
  const handler = new TaskRequestHandler(tasks, options.push ?? noPushConfigs, log);
  const transport = new JsonRpcTransportHandler(handler);

  async function authenticate(req: IncomingMessage): Promise<Principal> {
    try {
      return await requireBearer(verifier, req, null);
    } catch (err) {
      if (err instanceof BearerRefusal) tasks.refused(null, 'a2a', null, 'UNAUTHENTICATED');
      throw err;
    }
  }

  async function serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (req.method !== 'POST')
      return sendProblem(res, 405, 'METHOD_NOT_ALLOWED', 'Use POST.', { allow: 'POST' });
    const principal = await authenticate(req);
    const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
    if (!JSON_TYPES.includes(type)) {
      throw new ServiceError('UNSUPPORTED_MEDIA_TYPE', 'Send the request as application/json.');
    }
    let body: unknown;
    try {
      body = JSON.parse((await readBody(req)).toString('utf8'));
    } catch (err) {
      if (err instanceof ServiceError) throw err;
      return sendJson(res, 200, rpcError(null, PARSE_ERROR, 'The body is not valid JSON.'));
    }
    if (body === null || typeof body !== 'object' || Array.isArray(body)) {
      const message = 'The body must be one JSON-RPC request object (batches are not served).';
      return sendJson(res, 200, rpcError(null, INVALID_REQUEST, message));
    }
    const request = body as { id?: unknown; method?: unknown; params?: { id?: unknown } };
    const method = typeof request.method === 'string' ? request.method : '';
    const scope = SCOPE_OF[method];
    if (scope && !principal.scopes.has(scope)) {
      const taskId = typeof request.params?.id === 'string' ? request.params.id : null;
      tasks.refused(principal.sub, method, taskId, 'FORBIDDEN');
      const message = `The token lacks the ${scope} scope.`;
      throw new BearerRefusal('FORBIDDEN', message, { scope }, principal.sub);
    }
    // Without the header a request is A2A 0.3 (the SDK's reading too), which is not served.
    const version = req.headers['a2a-version'];
    const requestedVersion = (Array.isArray(version) ? version[0] : version) || '0.3';
    try {
      validateVersion(requestedVersion, await handler.getAgentCard(), 'JSONRPC');
    } catch (err) {
      return sendJson(res, 200, rpcErrorOf(request.id, err, log));
    }

    const abort = new AbortController();
    res.once('close', () => abort.abort());
    const caller = new Caller(principal, abort.signal);
    const reply = await transport.handle(request, callContext(caller, requestedVersion));
    if (!(Symbol.asyncIterator in reply)) {
      if (caller.refusal) return sendRefusal(res, caller.refusal);
      return sendJson(res, 200, checkedReply(reply, log));
    }
    const stream = reply[Symbol.asyncIterator]();
    let first: IteratorResult<JsonRpcReply, void>;
    try {
      first = await stream.next();
    } catch (err) {
      // Refused before the first event (unknown task, bad message…): a plain JSON-RPC answer.
      if (caller.refusal) return sendRefusal(res, caller.refusal);
      return sendJson(res, 200, rpcErrorOf(request.id, err, log));
    }
    await sendStream(res, first, stream, request.id, log);
  }

  return async function a2a(req, res) {
    const path = (req.url ?? '/').split('?')[0];
    if (path === AGENT_CARD_PATH) {
      if (req.method !== 'GET' && req.method !== 'HEAD')
        sendProblem(res, 405, 'METHOD_NOT_ALLOWED', 'Use GET.', { allow: 'GET, HEAD' });
      else sendJson(res, 200, handler.card(baseUrlOf(req)));
      return true;
    }
    if (path !== A2A_PATH) return false;
    try {
      await serve(req, res);
    } catch (err) {
      if (err instanceof PayloadTooLarge) {
        sendTooLarge(res, err.limit);
      } else if (err instanceof ServiceError) {
        sendRefusal(res, err);
      } else {
        log.error({ err: coerceError(err), path }, 'unexpected error in the A2A face');
        if (!res.headersSent) sendJson(res, 500, rpcError(null, -32603, MASKED));
        else res.end();
      }
    }
    return true;
  };
}
