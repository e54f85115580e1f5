import type { IncomingMessage, ServerResponse } from 'node:http';
import type { TLSSocket } from 'node:tls';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import type { Logger } from 'pino';
import { ALL_SCOPES, type Principal, SCOPES } from '../../auth/principal.js';
import type { TokenVerifier } from '../../auth/tokens.js';
import { coerceError, type ErrorCode, ServiceError } from '../../errors.js';
import { PayloadTooLarge } from '../../http/body.js';
import { BearerRefusal, bearerChallenge, requireBearer } from '../../http/challenge.js';
import { sendJson, sendProblem } from '../../http/problem.js';
import type { RouteHandler } from '../../http/server.js';
import type { TaskService } from '../../tasks/service.js';
import { isTaskId } from '../../tasks/validation.js';
import { readJsonBody } from './body.js';
import { GateRefusal } from './refusal.js';
import { createMcpServer } from './server.js';
import { Sessions } from './sessions.js';

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

/** §9: the scope each method needs; methods not listed need a valid token only. */
const SCOPE_OF: Record<string, string> = {
  'tools/call': SCOPES.write,
  'tasks/cancel': SCOPES.write,
  'tasks/get': SCOPES.read,
  'tasks/result': SCOPES.read,
  'tasks/list': SCOPES.read,
};
/** The audit's name for each refused task operation, as the other faces name it. */
const OPERATION_OF: Record<string, string> = {
  'tools/call': 'startTask',
  'tasks/cancel': 'cancelTask',
  'tasks/get': 'task',
  'tasks/result': 'taskUpdated',
  'tasks/list': 'tasks',
};
const STATUS_OF: Partial<Record<ErrorCode, number>> = {
  UNAUTHENTICATED: 401,
  FORBIDDEN: 403,
  RATE_LIMITED: 429,
  SERVICE_UNAVAILABLE: 503,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
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

  function metadata(req: IncomingMessage, res: ServerResponse): void {
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      throw new GateRefusal(405, 'METHOD_NOT_ALLOWED', 'Use GET.', { allow: 'GET' });
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
  function checkScopes(principal: Principal, messages: Message[]): void {
    for (const message of messages) {
      const method = typeof message.method === 'string' ? message.method : '';
      const scope = SCOPE_OF[method];
      if (scope && !principal.scopes.has(scope)) {
        const taskId = message.params?.taskId;
        tasks.refused(
          principal.sub,
          OPERATION_OF[method] ?? method,
          typeof taskId === 'string' && isTaskId(taskId) ? taskId : null,
          'FORBIDDEN',
        );
        const text = `The token lacks the ${scope} scope, which ${method} needs.`;
        throw new BearerRefusal('FORBIDDEN', text, { scope }, principal.sub);
      }
    }
  }

  async function serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const base = baseOf(req);
    const origin = req.headers.origin;
    const listed =
      options.corsOrigins !== '*' && origin !== undefined && options.corsOrigins.includes(origin);
    if (origin !== undefined && origin.toLowerCase() !== base.toLowerCase() && !listed) {
      throw new GateRefusal(403, 'FORBIDDEN', `Requests from origin ${origin} are refused here.`);
    }
    const method = req.method ?? 'GET';
    if (method !== 'POST' && method !== 'GET' && method !== 'DELETE') {
      throw new GateRefusal(405, 'METHOD_NOT_ALLOWED', 'Use POST, GET or DELETE.', {
        allow: 'GET, POST, DELETE',
      });
    }
    const principal = await requireBearer(verifier, req, null);

    let body: unknown;
    let messages: Message[] = [];
    if (method === 'POST') {
      const parsed = await readJsonBody(req);
      if (!parsed.ok) return jsonRpcError(res, 400, -32700, 'Parse error: Invalid JSON');
      body = parsed.value;
      messages = messagesOf(body);
      checkScopes(principal, messages);
    }

    const header = req.headers['mcp-session-id'];
    let session = typeof header === 'string' ? sessions.find(header, principal.sub) : undefined;
    if (header === undefined && messages.some((m) => m.method === 'initialize')) {
      if (sessions.full) {
        throw new GateRefusal(
          503,
          'SERVICE_UNAVAILABLE',
          'This server holds MCP_MAX_SESSIONS sessions already; try again later.',
          { 'retry-after': String(sessions.retryAfterSeconds()) },
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
    (req as IncomingMessage & { auth?: AuthInfo }).auth = authInfo;
    await session.transport.handleRequest(req, res, body);
  }

  function refuse(req: IncomingMessage, res: ServerResponse, err: unknown): void {
    if (res.headersSent) {
      log.error({ err: coerceError(err) }, 'MCP response failed after its headers were sent');
      res.destroy();
      return;
    }
    if (err instanceof ServiceError) {
      const status = err instanceof GateRefusal ? err.status : (STATUS_OF[err.code] ?? 400);
      const headers: Record<string, string> = {
        ...(err instanceof GateRefusal ? err.headers : {}),
        ...bearerChallenge(
          err,
          err.code === 'UNAUTHENTICATED'
            ? { resource_metadata: `${baseOf(req)}${METADATA_PATH}` }
            : {},
        ),
      };
      const retryAfterMs = err.details?.retryAfterMs;
      if (typeof retryAfterMs === 'number') {
        headers['retry-after'] = String(Math.max(1, Math.ceil(retryAfterMs / 1000)));
      }
      sendProblem(res, status, err.code, err.message, headers);
      return;
    }
    log.error({ err: coerceError(err), method: req.method }, 'unexpected error in the MCP face');
    sendProblem(res, 500, 'INTERNAL_SERVER_ERROR', 'Unexpected error.');
  }

  return {
    async handle(req, res) {
      const path = (req.url ?? '/').split('?')[0];
      if (path !== MCP_PATH && path !== METADATA_PATH) return false;
      try {
        if (path === METADATA_PATH) metadata(req, res);
        else await serve(req, res);
      } catch (err) {
        if (err instanceof PayloadTooLarge) throw err; // the server's 413, connection closed
        refuse(req, res, err);
      }
      return true;
    },
    close: () => sessions.close(),
  };
}
