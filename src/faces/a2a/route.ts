import type { IncomingMessage, ServerResponse } from 'node:http';
import { JsonRpcTransportHandler, validateVersion } from '@a2a-js/sdk/server';
import type { Logger } from 'pino';
import { toActor } from '../../auth/principal.js';
import type { TokenVerifier } from '../../auth/tokens.js';
import { readJson } from '../../http/json-body.js';
import { answerThrown } from '../../http/last-catch.js';
import { sendJson } from '../../http/problem.js';
import { requireBearer, sendMethodNotAllowed, sendRefusal } from '../../http/refusal.js';
import type { RouteHandler } from '../../http/server.js';
import type { Operation } from '../../tasks/scopes.js';
import type { TaskService } from '../../tasks/service.js';
import { A2A_PATH, AGENT_CARD_PATH, baseUrlOf, requestedVersionOf, sendCard } from './card.js';
import { Caller, callContext } from './context.js';
import { limitOf } from './errors.js';
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
  /** The kind a message naming no skill starts (`A2A_DEFAULT_SKILL`); none: it lists the skills. */
  defaultSkill?: string | undefined;
}

/** The task operation each method is, whose scope it needs (DESIGN §10); others need a token only. */
const OPERATION_OF: Readonly<Record<string, Operation>> = {
  SendMessage: 'startTask',
  SendStreamingMessage: 'startTask',
  CancelTask: 'cancelTask',
  CreateTaskPushNotificationConfig: 'attachWebhook',
  DeleteTaskPushNotificationConfig: 'detachWebhook',
  GetTask: 'task',
  ListTasks: 'tasks',
  SubscribeToTask: 'taskUpdated',
  GetTaskPushNotificationConfig: 'webhooks',
  ListTaskPushNotificationConfigs: 'webhooks',
};

/** JSON-RPC 2.0's own codes, for what fails before the A2A transport sees the request. */
const PARSE_ERROR = -32700;
const INVALID_REQUEST = -32600;
const rpcError = (id: unknown, code: number, message: string): JsonRpcReply => ({
  jsonrpc: '2.0',
  id: rpcIdOf(id),
  error: { code, message },
});

/**
 * The A2A face (DESIGN §10): the agent card, and JSON-RPC on `POST /a2a` through the SDK's
 * transport over our own request handler. The token is checked before the body is read and
 * the method's scope before the SDK parses it; a request without `A2A-Version: 1.0` counts
 * as 0.3, which is not served.
 */
export function createA2AHandler(options: A2AOptions): RouteHandler {
  const { tasks, verifier, log } = options;
  const push = options.push ?? noPushConfigs;
  const handler = new TaskRequestHandler(tasks, push, log, options.defaultSkill);
  const transport = new JsonRpcTransportHandler(handler);

  async function serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (req.method !== 'POST') return sendMethodNotAllowed(res, 'POST', 'Use POST.');
    const principal = await requireBearer(verifier, req, { audit: tasks.gate, operation: 'a2a' });
    const parsed = await readJson(req);
    if (!parsed.ok) {
      return sendJson(res, 200, rpcError(null, PARSE_ERROR, 'The body is not valid JSON.'));
    }
    const body = parsed.value;
    if (body === null || typeof body !== 'object' || Array.isArray(body)) {
      const message = 'The body must be one JSON-RPC request object (batches are not served).';
      return sendJson(res, 200, rpcError(null, INVALID_REQUEST, message));
    }
    const request = body as { id?: unknown; method?: unknown; params?: { id?: unknown } };
    const method = typeof request.method === 'string' ? request.method : '';
    const operation = OPERATION_OF[method];
    if (operation !== undefined) {
      const taskId = typeof request.params?.id === 'string' ? request.params.id : null;
      tasks.gate.authorize(toActor(principal), operation, taskId, method);
    }
    // Without the header a request is A2A 0.3 (the SDK's reading too), which is not served.
    const requestedVersion = requestedVersionOf(req.headers['a2a-version']);
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
      const limit = limitOf(reply.error);
      if (limit) return sendRefusal(res, limit);
      return sendJson(res, 200, checkedReply(reply, log));
    }
    const stream = reply[Symbol.asyncIterator]();
    let first: IteratorResult<JsonRpcReply, void>;
    try {
      first = await stream.next();
    } catch (err) {
      // Refused before the first event (unknown task, bad message…): a plain JSON-RPC answer.
      const limit = limitOf(err);
      if (limit) return sendRefusal(res, limit);
      return sendJson(res, 200, rpcErrorOf(request.id, err, log));
    }
    await sendStream(res, first, stream, request.id, log);
  }

  return async function a2a(req, res) {
    const path = (req.url ?? '/').split('?')[0];
    if (path === AGENT_CARD_PATH) {
      if (req.method !== 'GET' && req.method !== 'HEAD')
        sendMethodNotAllowed(res, 'GET, HEAD', 'Use GET.');
      else sendCard(req, res, handler.card(baseUrlOf(req)));
      return true;
    }
    // A2A clients (the conformance kit's among them) may join the card's URL and `/`.
    if (path !== A2A_PATH && path !== `${A2A_PATH}/`) return false;
    try {
      await serve(req, res);
    } catch (err) {
      answerThrown(req, res, err, {
        log,
        where: 'the A2A face',
        mask: (response) => sendJson(response, 500, rpcError(null, -32603, MASKED)),
      });
    }
    return true;
  };
}
