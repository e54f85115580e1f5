import type { GraphQLSchema } from 'graphql';
import { createYoga, type Plugin, type YogaServerInstance } from 'graphql-yoga';
import type { Logger } from 'pino';
import { authenticate } from '../../auth/authenticate.js';
import type { Principal } from '../../auth/principal.js';
import type { TokenVerifier } from '../../auth/tokens.js';
import type { Limits } from '../../config/config.js';
import { allowedOrigin, EXPOSED_HEADERS } from '../../http/cors.js';
import type { ScheduleService } from '../../schedules/service.js';
import type { TaskService } from '../../tasks/service.js';
import type { Context } from './builder.js';
import { ErrorMasking, yogaLogger } from './errors.js';
import { useCodedErrors, useHttpRules } from './http-rules.js';
import { useHotOperationJit } from './jit.js';
import { boundedParseCaches, type GraphQLLimits, limitPlugins } from './limits.js';
import { type GraphQLObserver, useOperationMetrics } from './metrics-plugin.js';
import { useNoSuggestions } from './no-suggestions.js';
import type { PersistedOperations } from './persisted.js';
import { useSharedEventResults } from './shared-events.js';

/** What the WebSocket face hands to yoga: the principal it authenticated at connection_init. */
export interface ServerContext {
  wsPrincipal?: Principal;
}

export interface YogaOptions {
  schema: GraphQLSchema;
  tasks: TaskService;
  schedules: ScheduleService;
  verifier: TokenVerifier;
  log: Logger;
  production: boolean;
  /** How unexpected errors are masked (`ErrorMasking.of(config)`). @default ErrorMasking.masked */
  masking?: ErrorMasking | undefined;
  /** DESIGN §12. */
  limits: GraphQLLimits & Pick<Limits, 'httpMaxBodyBytes' | 'corsOrigins'>;
  /** Told of every operation (metrics). */
  observer?: GraphQLObserver | undefined;
  /** Persisted operations and APQ; without, every request carries its document. */
  persisted?: PersistedOperations | undefined;
  /** An embedder's yoga or envelop plugins, after ours (see direct-hooks.ts). */
  plugins?: readonly Plugin<any, any, any>[] | undefined;
}

/** Builds the yoga instance; it never listens (the app's HTTP server serves it). */
export function createYogaServer(options: YogaOptions): YogaServerInstance<ServerContext, Context> {
  const { limits } = options;
  return createYoga<ServerContext, Context>({
    schema: options.schema,
    graphqlEndpoint: '/graphql',
    landingPage: false,
    logging: yogaLogger(options.log),
    plugins: [
      useHttpRules(),
      ...(options.persisted ? [options.persisted.plugin] : []),
      ...limitPlugins(limits, options.production),
      useCodedErrors(options.production),
      ...(options.production ? [useNoSuggestions()] : []),
      useSharedEventResults(),
      ...(options.observer ? [useOperationMetrics(options.observer)] : []),
      useHotOperationJit(),
      ...(options.plugins ?? []),
    ],
    parserAndValidationCache: boundedParseCaches(),
    // JSON bodies only (useHttpRules); the node server has already bounded them.
    multipart: false,
    maxRequestBodySize: limits.httpMaxBodyBytes,
    // The same answer as the node server gives every face (src/http/cors.ts), for yoga.fetch.
    cors: (request) => {
      const origin = allowedOrigin(request.headers.get('origin') ?? undefined, limits.corsOrigins);
      return origin === undefined
        ? false
        : { origin, credentials: false, exposedHeaders: EXPOSED_HEADERS.split(', ') };
    },
    maskedErrors: (options.masking ?? ErrorMasking.masked).yogaOptions,
    // GraphiQL is served by src/faces/graphql/graphiql.ts (compressed, cached), not by yoga.
    graphiql: false,
    context: async (initial): Promise<Context> => {
      if (initial.wsPrincipal)
        return {
          principal: initial.wsPrincipal,
          authError: null,
          tasks: options.tasks,
          schedules: options.schedules,
        };
      const auth = await authenticate(
        options.verifier,
        initial.request.headers.get('authorization'),
      );
      return {
        principal: auth.principal,
        authError: auth.error,
        tasks: options.tasks,
        schedules: options.schedules,
        streamUntil: auth.principal?.expiresAt,
      };
    },
  });
}
