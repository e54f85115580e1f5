import type { Plugin as YogaPlugin } from 'graphql-yoga';
import type { Logger } from 'pino';
import type { TokenVerifier } from './auth/tokens.js';
import type { Config } from './config/config.js';
import type { Db } from './db/connect.js';
import { databaseReady } from './db/health.js';
import { a2aPushConfigs } from './faces/a2a/push-configs.js';
import { createA2AHandler } from './faces/a2a/route.js';
import { resultsUntouched, servedDirectly } from './faces/graphql/direct-hooks.js';
import { ErrorMasking } from './faces/graphql/errors.js';
import { graphqlRoute } from './faces/graphql/fast-post.js';
import { createGraphiQLHandler } from './faces/graphql/graphiql.js';
import { schema } from './faces/graphql/index.js';
import { useOperationSpans } from './faces/graphql/operation-spans.js';
import { PersistedOperations } from './faces/graphql/persisted.js';
import { attachWebSockets } from './faces/graphql/ws.js';
import { createYogaServer } from './faces/graphql/yoga.js';
import { createMcpFace } from './faces/mcp/handler.js';
import { createRestHandler } from './faces/rest/router.js';
import { createDashboardHandler } from './http/dashboard.js';
import { requestLogger } from './http/request-log.js';
import { createHttpServer } from './http/server.js';
import type { Metrics } from './metrics/metrics.js';
import type { ScheduleService } from './schedules/service.js';
import type { TaskService } from './tasks/service.js';
import { tracingOn } from './tracing/tracer.js';

/** What the faces are built over. */
export interface FaceParts {
  config: Config;
  log: Logger;
  db: Db;
  tasks: TaskService;
  schedules: ScheduleService;
  verifier: TokenVerifier;
  metrics: Metrics;
  devToken: string | undefined;
  /** See `AppOptions.graphqlPlugins`. */
  graphqlPlugins: readonly YogaPlugin<any, any, any>[] | undefined;
}

/**
 * The HTTP side of the app: one node server with metrics and, in api and all processes, each
 * face over the task service (GraphQL over HTTP and WebSockets, REST, MCP, A2A, GraphiQL and
 * the dashboard when configured), with the request log. A worker process serves metrics and
 * probes only. Not listening yet: `createApp`'s `listen` does that.
 */
export function serveFaces(parts: FaceParts) {
  const { config, log, db, tasks, schedules, verifier, metrics, devToken, graphqlPlugins } = parts;
  const servesApi = config.role !== 'worker';
  const { defaultSkill } = config.a2a;
  const masking = ErrorMasking.of(config);
  const persisted = servesApi ? new PersistedOperations(config.persisted, verifier) : undefined;
  // DESIGN §13: operation spans only while tracing is on (they hook execution only, so the
  // direct POST path stays open either way).
  const plugins = [...(tracingOn() ? [useOperationSpans()] : []), ...(graphqlPlugins ?? [])];
  const yoga = servesApi
    ? createYogaServer({
        schema,
        tasks,
        schedules,
        verifier,
        log,
        production: config.production,
        masking,
        limits: config.limits,
        observer: metrics,
        persisted,
        plugins,
      })
    : undefined;
  const mcp = servesApi
    ? createMcpFace({
        tasks,
        verifier,
        log,
        issuer: config.auth.issuer,
        sessionIdleMs: config.mcp.sessionIdleMs,
        maxSessions: config.mcp.maxSessions,
        corsOrigins: config.limits.corsOrigins,
      })
    : undefined;
  const server = createHttpServer({
    limits: config.limits,
    log,
    handlers: [
      metrics.handler,
      ...(servesApi && mcp
        ? [
            ...(config.graphiql ? [createGraphiQLHandler({ devToken })] : []),
            createRestHandler({ tasks, schedules, verifier, log }),
            mcp.handle,
            createA2AHandler({
              tasks,
              verifier,
              log,
              push: a2aPushConfigs(tasks),
              defaultSkill,
            }),
            ...(config.dashboard ? [createDashboardHandler({ devToken })] : []),
          ]
        : []),
      ...(yoga ? [graphqlRoute(yoga, servedDirectly(graphqlPlugins), masking, persisted)] : []),
    ],
    onRequest: [(req, res) => metrics.request(req, res), requestLogger(log, verifier)],
    ready: () => databaseReady(db, log),
  });
  const ws = yoga
    ? attachWebSockets(
        server,
        yoga,
        verifier,
        log,
        config.limits,
        masking,
        persisted,
        resultsUntouched(plugins),
      )
    : undefined;
  if (ws) metrics.countSockets(() => ws.wss.clients.size);

  return { server, ws, mcp };
}
