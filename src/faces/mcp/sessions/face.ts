import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import type { Logger } from 'pino';
import type { Principal } from '../../../auth/principal.js';
import { ServiceError } from '../../../errors.js';
import type { TaskService } from '../../../tasks/service.js';
import { isRecord, sendRpcError } from '../core/rpc.js';
import { createMcpServer } from './server.js';
import { Sessions } from './sessions.js';

export interface SessionFaceOptions {
  tasks: TaskService;
  log: Logger;
  /** MCP_SESSION_IDLE_MS */
  idleMs: number;
  /** MCP_MAX_SESSIONS */
  maxSessions: number;
}

/**
 * MCP 2025-11-25 (DESIGN §9): Streamable HTTP with sessions, through the SDK's server. The
 * door (handler.ts) has checked the origin, the token and the scopes, and read a POST's body.
 */
export function createSessionFace(options: SessionFaceOptions) {
  const { tasks, log } = options;
  const sessions = new Sessions({
    idleMs: options.idleMs,
    max: options.maxSessions,
    log,
    createServer: (shutdown) => createMcpServer({ tasks, log, shutdown }),
  });

  return {
    /** Serves one request of a session, or the `initialize` that opens one. */
    async serve(
      req: IncomingMessage,
      res: ServerResponse,
      principal: Principal,
      body: unknown,
    ): Promise<void> {
      const header = req.headers['mcp-session-id'];
      let session = typeof header === 'string' ? sessions.find(header, principal.sub) : undefined;
      const initializes = (Array.isArray(body) ? body : [body]).some(
        (message) => isRecord(message) && message.method === 'initialize',
      );
      if (header === undefined && initializes) {
        if (sessions.full) {
          throw new ServiceError(
            'SERVICE_UNAVAILABLE',
            'This server holds MCP_MAX_SESSIONS sessions already; try again later.',
            { retryAfterMs: sessions.retryAfterMs() },
          );
        }
        session = await sessions.create(principal.sub);
      } else if (header === undefined) {
        const message = 'Bad Request: Mcp-Session-Id header is required';
        return sendRpcError(res, 400, null, { code: -32000, message });
      } else if (!session) {
        return sendRpcError(res, 404, null, { code: -32001, message: 'Session not found' });
      }

      const authInfo: AuthInfo = {
        token: (req.headers.authorization ?? '').replace(/^Bearer\s+/i, ''),
        clientId: principal.sub,
        scopes: [...principal.scopes],
        ...(principal.expiresAt ? { expiresAt: Math.floor(principal.expiresAt / 1000) } : {}),
        extra: { principal },
      };
      res.once('close', session.use(req.method !== 'GET'));
      await session.transport.handleRequest(req, res, body, authInfo);
    },
    /** Answers every waiting request and closes every session. */
    close: () => sessions.close(),
  };
}
