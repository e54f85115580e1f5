import type { IncomingMessage, ServerResponse } from 'node:http';
import type { TLSSocket } from 'node:tls';
import type { Logger } from 'pino';
import { ALL_SCOPES, toActor } from '../../auth/principal.js';
import type { TokenVerifier } from '../../auth/tokens.js';
import { ServiceError } from '../../errors.js';
import { readJson } from '../../http/json-body.js';
import { answerThrown } from '../../http/last-catch.js';
import { sendJson } from '../../http/problem.js';
import { requireBearer, sendMethodNotAllowed } from '../../http/refusal.js';
import type { RouteHandler } from '../../http/server.js';
import type { Operation } from '../../tasks/scopes.js';
import type { Actor, TaskService } from '../../tasks/service.js';
import { isTaskId } from '../../tasks/validation.js';
import { PARSE_ERROR } from './core/errors.js';
import { sendRpcError } from './core/rpc.js';
import { createSessionFace } from './sessions/face.js';
import { isStateless } from './stateless/envelope.js';
import { createStatelessFace } from './stateless/face.js';

export const MCP_PATH = '/mcp';
export const METADATA_PATH = '/.well-known/oauth-protected-resource/mcp';

export interface McpFaceOptions {
  tasks: TaskService;
  verifier: TokenVerifier;
  log: Logger;
  /** AUTH_ISSUER, named as the authorization server in the resource metadata. */
  issuer: string | undefined;
  /** MCP_SESSION_IDLE_MS */
  sessionIdleMs: number;
  /** MCP_MAX_SESSIONS */
  maxSessions: number;
  /**
   * CORS_ORIGINS: an origin listed there may call /mcp from a browser; `*` opens nothing here,
   * since DNS rebinding is exactly a page of any origin reaching a local server.
   */
  corsOrigins: '*' | readonly string[];
}

export interface McpFace {
  /** Serves `/mcp` and its protected-resource metadata. */
  handle: RouteHandler;
  /** Closes every session; waiting requests end. */
  close(): Promise<void>;
}

/** §9: the task operation each method is, whose scope it needs; others need a valid token only. */
const OPERATION_OF: Record<string, Operation> = {
  'tools/call': 'startTask',
  'tasks/cancel': 'cancelTask',
  'tasks/update': 'provideTaskInput',
  'tasks/get': 'task',
  'tasks/result': 'taskUpdated',
  'tasks/list': 'tasks',
  'subscriptions/listen': 'taskUpdated',
};

type Message = { method?: unknown; id?: unknown; params?: { taskId?: unknown } };
const messagesOf = (body: unknown): Message[] =>
  (Array.isArray(body) ? body : [body]).filter(
    (m): m is Message => m !== null && typeof m === 'object',
  );

/** `<base>`: the scheme and `Host` the request came to (a Host that is not one reads as localhost). */
function baseOf(req: IncomingMessage): string {
  const scheme = (req.socket as TLSSocket).encrypted ? 'https' : 'http';
  const host = req.headers.host ?? '';
  return `${scheme}://${/^[A-Za-z0-9.:[\]-]+$/.test(host) ? host : 'localhost'}`;
}

/**
 * The MCP face: its door. Both revisions come through it — the origin check, the token
 * (refusals audited), the body and each message's scope — and it hands the request to the
 * revision it speaks: 2026-07-28 (DESIGN §9b, `stateless/`) or 2025-11-25 with sessions
 * (§9, `sessions/`). Neither revision knows the other; what they share is `core/`.
 */
export function createMcpFace(options: McpFaceOptions): McpFace {
  const { tasks, verifier, log } = options;
  const sessions = createSessionFace({
    tasks,
    log,
    idleMs: options.sessionIdleMs,
    maxSessions: options.maxSessions,
  });
  const stateless = createStatelessFace({ tasks, log });

  function metadata(req: IncomingMessage, res: ServerResponse): void {
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      sendMethodNotAllowed(res, 'GET', 'Use GET.');
      return;
    }
    const base = baseOf(req);
    sendJson(res, 200, {
      resource: `${base}${MCP_PATH}`,
      bearer_methods_supported: ['header'],
      scopes_supported: ALL_SCOPES,
      ...(options.issuer ? { authorization_servers: [options.issuer] } : {}),
    });
  }

  /** Refuses a token that lacks the scope some message of the body needs (403, audited). */
  function checkScopes(actor: Actor, messages: Message[]): void {
    for (const message of messages) {
      const operation = OPERATION_OF[typeof message.method === 'string' ? message.method : ''];
      if (operation === undefined) continue;
      const taskId = message.params?.taskId;
      tasks.gate.authorize(
        actor,
        operation,
        typeof taskId === 'string' && isTaskId(taskId) ? taskId : null,
      );
    }
  }

  async function serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const base = baseOf(req);
    const origin = req.headers.origin;
    const listed =
      options.corsOrigins !== '*' && origin !== undefined && options.corsOrigins.includes(origin);
    if (origin !== undefined && origin.toLowerCase() !== base.toLowerCase() && !listed) {
      throw new ServiceError('FORBIDDEN', `Requests from origin ${origin} are refused here.`);
    }
    const method = req.method ?? 'GET';
    if (method !== 'POST' && method !== 'GET' && method !== 'DELETE') {
      return sendMethodNotAllowed(res, 'GET, POST, DELETE', 'Use POST, GET or DELETE.');
    }
    const principal = await requireBearer(verifier, req, { audit: tasks.gate, operation: 'mcp' });

    let body: unknown;
    if (method === 'POST') {
      const parsed = await readJson(req);
      if (!parsed.ok) {
        return sendRpcError(res, 400, null, {
          code: PARSE_ERROR,
          message: 'Parse error: Invalid JSON',
        });
      }
      body = parsed.value;
      checkScopes(toActor(principal), messagesOf(body));
      if (isStateless(req, body)) return stateless.serve(req, res, principal, body);
    }
    await sessions.serve(req, res, principal, body);
  }

  return {
    async handle(req, res) {
      const path = (req.url ?? '/').split('?')[0];
      if (path !== MCP_PATH && path !== METADATA_PATH) return false;
      try {
        if (path === METADATA_PATH) metadata(req, res);
        else await serve(req, res);
      } catch (err) {
        // A 401 names the resource metadata in its challenge (RFC 9728).
        const challenge = { resource_metadata: `${baseOf(req)}${METADATA_PATH}` };
        answerThrown(req, res, err, { log, where: 'the MCP face', challenge });
      }
      return true;
    },
    close: async () => {
      await stateless.close();
      await sessions.close();
    },
  };
}
