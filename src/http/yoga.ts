import { renderGraphiQL } from '@graphql-yoga/render-graphiql';
import { createYoga, type YogaServerInstance } from 'graphql-yoga';
import type { GraphQLSchema } from 'graphql';
import type { Logger } from 'pino';
import { authenticate } from '../auth/authenticate.js';
import type { Principal } from '../auth/principal.js';
import type { TokenVerifier } from '../auth/tokens.js';
import type { Context } from '../graphql/builder.js';
import { maskError, yogaLogger } from '../graphql/errors.js';
import type { TaskService } from '../tasks/service.js';
import { useSharedEventResults } from './shared-events.js';

/** What the WebSocket face hands to yoga: the principal it authenticated at connection_init. */
export interface ServerContext {
  wsPrincipal?: Principal;
}

export interface YogaOptions {
  schema: GraphQLSchema;
  tasks: TaskService;
  verifier: TokenVerifier;
  log: Logger;
  graphiql: boolean;
  /** Pre-fills GraphiQL's Authorization header (development only). */
  graphiqlToken?: string | undefined;
  production: boolean;
}

const DEFAULT_QUERY = `# Start a task, then follow it:
mutation Start {
  startTask(input: { kind: "sleep", input: { ms: 5000 } }) {
    id status progress pollIntervalMs createdAt expiresAt
  }
}

query Poll($id: ID!) {
  task(id: $id) { id status progress statusMessage version result error { code message } }
}

subscription Follow($id: ID!) {
  taskUpdated(id: $id) { id status progress version result }
}

mutation Cancel($id: ID!) {
  cancelTask(id: $id) { id status version }
}

query List {
  tasks(first: 10) { edges { cursor node { id kind status createdAt } } pageInfo { hasNextPage endCursor } }
}
`;

/** Builds the yoga instance; it never listens (src/http/server.ts does). */
export function createYogaServer(options: YogaOptions): YogaServerInstance<ServerContext, Context> {
  return createYoga<ServerContext, Context>({
    schema: options.schema,
    graphqlEndpoint: '/graphql',
    landingPage: false,
    logging: yogaLogger(options.log),
    plugins: [useSharedEventResults()],
    maskedErrors: { maskError, isDev: !options.production && process.env.NODE_ENV === 'development' },
    // GraphiQL's code is served by this server, not fetched from a CDN: it works offline and
    // behind locked-down networks.
    renderGraphiQL,
    graphiql: options.graphiql
      ? {
          title: 'taskhandle',
          defaultQuery: DEFAULT_QUERY,
          ...(options.graphiqlToken ? { headers: JSON.stringify({ Authorization: `Bearer ${options.graphiqlToken}` }, null, 2) } : {}),
        }
      : false,
    context: async (initial): Promise<Context> => {
      if (initial.wsPrincipal) return { principal: initial.wsPrincipal, authError: null, tasks: options.tasks };
      const auth = await authenticate(options.verifier, initial.request.headers.get('authorization'));
      return { principal: auth.principal, authError: auth.error, tasks: options.tasks, streamUntil: auth.principal?.expiresAt };
    },
  });
}
