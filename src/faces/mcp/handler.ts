import type { IncomingMessage, ServerResponse } from 'node:http';
import type { TLSSocket } from 'node:tls';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
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
import { createMcpServer } from './server.js';
import { Sessions, Shutdown } from './sessions.js';
import { isStateless } from './stateless/envelope.js';
import { serveStateless } from './stateless/face.js';

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

function jsonRpcError(res: ServerResponse, status: number, code: number, message: string): void {
  sendJson(res, status, { jsonrpc: '2.0', error: { code, message }, id: null });
}

/** The MCP face (DESIGN §9): Streamable HTTP with sessions over the task service. */
export function createMcpFace(options: McpFaceOptions): McpFace {
  const { tasks, verifier, log } = options;
  const sessions = new Sessions({
    idleMs: options.sessionIdleMs,
    max: options.maxSessions,
    log,
    createServer: (shutdown) => createMcpServer({ tasks, log, shutdown }),
  });
  /** The 2026-07-28 revision's waiting calls, answered when the face closes. */
  const stateless = new Shutdown();

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
    let messages: Message[] = [];
    if (method === 'POST') {
      const parsed = await readJson(req);
      if (!parsed.ok) return jsonRpcError(res, 400, -32700, 'Parse error: Invalid JSON');
      body = parsed.value;
      messages = messagesOf(body);
      checkScopes(toActor(principal), messages);
      if (isStateless(req, body)) {
        const context = { tasks, log, principal, stopping: stateless.signal };
        return stateless.track(serveStateless(context, req, res, body));
      }
    }

    const header = req.headers['mcp-session-id'];
    let session = typeof header === 'string' ? sessions.find(header, principal.sub) : undefined;
    if (header === undefined && messages.some((m) => m.method === 'initialize')) {
      if (sessions.full) {
        throw new ServiceError(
          'SERVICE_UNAVAILABLE',
          'This server holds MCP_MAX_SESSIONS sessions already; try again later.',
          { retryAfterMs: sessions.retryAfterMs() },
        );
      }
      session = await sessions.create(principal.sub);
    } else if (header === undefined) {
      return jsonRpcError(res, 400, -32000, 'Bad Request: Mcp-Session-Id header is required');
    } else if (!session) {
      return jsonRpcError(res, 404, -32001, 'Session not found');
    }

    const authInfo: AuthInfo = {
      token: (req.headers.authorization ?? '').replace(/^Bearer\s+/i, ''),
      clientId: principal.sub,
      scopes: [...principal.scopes],
      ...(principal.expiresAt ? { expiresAt: Math.floor(principal.expiresAt / 1000) } : {}),
      extra: { principal },
    };
    res.once('close', session.use(method !== 'GET'));
    await session.transport.handleRequest(req, res, body, authInfo);
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
      await stateless.begin();
      await sessions.close();
    },
  };
}
