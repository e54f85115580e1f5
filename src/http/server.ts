import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import type { Limits } from '../config/config.js';
import { tracingOn } from '../tracing/tracer.js';
import { declaredTooLarge, PayloadTooLarge, setBodyLimit } from './body.js';
import { applyCors } from './cors.js';
import { guardUpgrades, hostAllowed, sendMisdirected } from './hosts.js';
import { answerThrown } from './last-catch.js';
import { sendProblem } from './problem.js';
import { traceRequest } from './trace.js';

export interface HttpRoutes {
  /** `/readyz`: true once the database is reachable and migrated. */
  ready(): Promise<boolean>;
  /**
   * The faces (REST, MCP, A2A, metrics, the dashboard…, GraphQL last), asked in turn; each
   * resolves false when the path is not its own. Empty in the worker role but for metrics.
   * A handler reads its body with `readJson` or `readBody` (src/http/json-body.ts, body.ts) and
   * lets what it throws propagate, to its own last catch or the server's (`answerThrown`).
   */
  handlers: readonly RouteHandler[];
  /** The body limit, timeouts and CORS origins of DESIGN §12. */
  limits: Pick<
    Limits,
    | 'httpMaxBodyBytes'
    | 'httpHeadersTimeoutMs'
    | 'httpRequestTimeoutMs'
    | 'corsOrigins'
    | 'allowedHosts'
  >;
  log: Logger;
  /** Called as each request arrives, before it is routed (request metrics, request logs). */
  onRequest?: ReadonlyArray<(req: IncomingMessage, res: ServerResponse) => void>;
}

/** Serves a request whose path it owns and resolves true; resolves false, untouched, otherwise. */
export type RouteHandler = (req: IncomingMessage, res: ServerResponse) => Promise<boolean>;

function send(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
  });
  res.end(text);
}

/**
 * The node HTTP server: CORS and the body limit for every route, health on every role, then
 * each handler in turn. It does not listen, and knows no face: the app hands them in.
 */
export function createHttpServer(routes: HttpRoutes): Server {
  const { limits, log } = routes;
  const hooks = routes.onRequest ?? [];

  async function serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    for (const hook of hooks) hook(req, res);
    if (!hostAllowed(limits.allowedHosts, req.headers.host)) return sendMisdirected(res);
    setBodyLimit(req, limits.httpMaxBodyBytes);
    if (applyCors(req, res, limits.corsOrigins)) return;
    // Refused here for every handler, however it reads its body; chunked bodies by readBody.
    if (declaredTooLarge(req)) throw new PayloadTooLarge(limits.httpMaxBodyBytes);
    const path = (req.url ?? '/').split('?')[0];
    if (path === '/healthz') return send(res, 200, { status: 'ok' });
    if (path === '/readyz') {
      const ready = await routes.ready().catch(() => false);
      return send(res, ready ? 200 : 503, { status: ready ? 'ready' : 'unavailable' });
    }
    for (const handler of routes.handlers) if (await handler(req, res)) return;
    sendProblem(res, 404, 'NOT_FOUND', 'No such route.');
  }

  const server = createServer(
    {
      headersTimeout: limits.httpHeadersTimeoutMs,
      requestTimeout: limits.httpRequestTimeoutMs,
      // Node checks the two timeouts on this period (30 s by default): keep it well under them.
      connectionsCheckingInterval: Math.max(50, Math.min(1_000, limits.httpHeadersTimeoutMs / 4)),
    },
    (req, res) => {
      // Tracing off (the default), no span is made: the request is served as it is.
      const served = tracingOn() ? traceRequest(req, res, () => serve(req, res)) : serve(req, res);
      served.catch((err: unknown) => answerThrown(req, res, err, { log, where: 'the server' }));
    },
  );
  // Keep-alive sockets outlive a benchmark's burst; close idle ones promptly on stop.
  server.keepAliveTimeout = 5_000;
  guardUpgrades(server, limits.allowedHosts);
  return server;
}
