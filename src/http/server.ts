import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { YogaServerInstance } from 'graphql-yoga';
import type { Context } from '../graphql/builder.js';
import { createGraphQLPostHandler } from './graphql-post.js';
import type { ServerContext } from './yoga.js';

export interface HttpRoutes {
  /** `/readyz`: true once the database is reachable and migrated. */
  ready(): Promise<boolean>;
  /** GraphQL (and GraphiQL) on `/graphql`; absent in the worker role. */
  yoga?: YogaServerInstance<ServerContext, Context> | undefined;
  /** The REST face on `/v1/jobs`; absent in the worker role. Resolves false when the path is not its own. */
  rest?: ((req: IncomingMessage, res: ServerResponse) => Promise<boolean>) | undefined;
}

function send(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/** The node HTTP server: health on every role, then REST, then GraphQL. It does not listen. */
export function createHttpServer(routes: HttpRoutes): Server {
  const graphql = routes.yoga ? createGraphQLPostHandler(routes.yoga) : undefined;
  const server = createServer(async (req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path === '/healthz') return send(res, 200, { status: 'ok' });
    if (path === '/readyz') {
      const ready = await routes.ready().catch(() => false);
      return send(res, ready ? 200 : 503, { status: ready ? 'ready' : 'unavailable' });
    }
    if (routes.rest && (await routes.rest(req, res))) return;
    if (graphql && path === '/graphql') return graphql(req, res);
    send(res, 404, { status: 404, title: 'Not Found' });
  });
  // Keep-alive sockets outlive a benchmark's burst; close idle ones promptly on stop.
  server.keepAliveTimeout = 5_000;
  return server;
}
