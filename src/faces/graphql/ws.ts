import type { Server } from 'node:http';
import { type ExecutionArgs, type ExecutionResult, GraphQLError } from 'graphql';
import { CloseCode } from 'graphql-ws';
import { isAsyncIterable, type YogaServerInstance } from 'graphql-yoga';
import type { Logger } from 'pino';
import { WebSocketServer } from 'ws';
import { authenticate } from '../../auth/authenticate.js';
import { hasScope, type Principal, SCOPES } from '../../auth/principal.js';
import type { TokenVerifier } from '../../auth/tokens.js';
import type { Limits } from '../../config/config.js';
import { Deadlines } from '../../deadlines.js';
import { coerceError } from '../../errors.js';
import type { Context } from './builder.js';
import type { ErrorMasking } from './errors.js';
import type { PersistedOperations } from './persisted.js';
import { pullableResults } from './shared-events.js';
import { FrameWriter } from './ws-frames.js';
import { type Connection, serveGraphqlWs } from './ws-socket.js';
import type { ServerContext } from './yoga.js';

type Extra = {
  principal?: Principal;
};

/**
 * What a failing operation sends, for that operation alone: graphql-ws closes the whole socket
 * (4500, with the message) on anything thrown, so nothing may be.
 */
function operationErrors(err: unknown, faults: Faults): GraphQLError[] {
  if (err instanceof GraphQLError) {
    // Over HTTP yoga answers `extensions.http` with a status; here it has no meaning.
    const { http, ...extensions } = err.extensions ?? {};
    if (extensions.code)
      return [http === undefined ? err : new GraphQLError(err.message, { extensions })];
    // A syntax error: yoga gives it this code over HTTP.
    return [new GraphQLError(err.message, { extensions: { code: 'GRAPHQL_PARSE_FAILED' } })];
  }
  faults.log.error({ err: coerceError(err) }, 'unexpected error in a WebSocket operation');
  return [faults.masking.unexpected(err)];
}

/** Where an operation's unexpected failure goes: the log, and masked to the client. */
interface Faults {
  log: Logger;
  masking: ErrorMasking;
}

/** Runs execute or subscribe; what it throws becomes the operation's error result. */
async function settle<T>(run: () => T | Promise<T>, faults: Faults): Promise<T | ExecutionResult> {
  try {
    return await run();
  } catch (err) {
    return { errors: operationErrors(err, faults) };
  }
}

/** A token's end closes its socket. */
const expire = (connection: Connection) =>
  connection.close(CloseCode.Forbidden, 'Forbidden: token expired');

type Enveloped = ReturnType<YogaServerInstance<ServerContext, Context>['getEnveloped']>;

/** What an operation's `rootValue` carries from onSubscribe to execute or subscribe. */
interface Operation {
  execute: Enveloped['execute'];
  subscribe: Enveloped['subscribe'];
  id: string;
  connection: Connection;
}

/**
 * A subscription's results, written as frames by the subscription (ws-frames.ts); `pulled`:
 * the plugins' hooks leave results without errors as they are, so those may be taken from
 * beneath them.
 */
async function subscribe(args: ExecutionArgs, faults: Faults, pulled: boolean) {
  const { subscribe, id, connection } = args.rootValue as Operation;
  const result = await settle(() => subscribe(args), faults);
  return isAsyncIterable(result)
    ? new FrameWriter(
        (result as AsyncIterable<ExecutionResult>)[Symbol.asyncIterator](),
        id,
        connection,
        pulled ? pullableResults(args.contextValue) : undefined,
      )
    : result;
}

/**
 * graphql-ws on `/graphql`. A socket authenticates once, in `connection_init`
 * (`connectionParams.authorization`, the same `Bearer …` string as over HTTP), is closed with
 * 4403 without a valid token and again when the token expires. Every operation goes through
 * yoga's envelop, so masking and the schema's authorization apply as over HTTP; what fails
 * outside it is masked by the same rule (`masking`, the one yoga was built with).
 */
export function attachWebSockets(
  server: Server,
  yoga: YogaServerInstance<ServerContext, Context>,
  verifier: TokenVerifier,
  log: Logger,
  limits: Pick<Limits, 'wsMaxPayloadBytes' | 'wsMaxSubscriptionsPerSocket'>,
  masking: ErrorMasking,
  /** The persisted operations yoga was built with: a hash may stand for the document here too. */
  persisted?: PersistedOperations | undefined,
  /**
   * Whether every plugin yoga was built with leaves a subscription's results without errors
   * as they are (`resultsUntouched` of an embedder's plugins): then those are written from
   * beneath the hooks, without a promise per subscriber (ws-frames.ts).
   */
  pulled = false,
) {
  const faults: Faults = { log, masking };
  // A larger frame closes the socket with 1009 (Message Too Big), before it is buffered whole.
  const wss = new WebSocketServer({
    server,
    path: '/graphql',
    maxPayload: limits.wsMaxPayloadBytes,
  });
  const deadlines = new Deadlines(expire);
  const disposable = serveGraphqlWs<Record<string, unknown> | undefined, Extra>(
    {
      onConnect: async (ctx) => {
        const raw = ctx.connectionParams?.authorization;
        const header =
          typeof raw === 'string' && !/^bearer\s/i.test(raw)
            ? `Bearer ${raw}`
            : (raw as string | undefined);
        const { principal } = await authenticate(verifier, header);
        // The socket holds the principal, not the bearer token, for as long as it is open.
        if (ctx.connectionParams)
          delete (ctx.connectionParams as { authorization?: unknown }).authorization;
        if (!principal) return false; // graphql-ws closes with 4403 Forbidden
        ctx.extra.principal = principal;
        if (principal.expiresAt !== undefined) deadlines.add(ctx.extra, principal.expiresAt);
        return true;
      },
      onClose: (ctx) => deadlines.delete(ctx.extra),
      onSubscribe: async (ctx, id, payload) => {
        // graphql-ws's own registry of the socket's operations, this one included: a client's
        // `complete` leaves it at once, so the count is never stale.
        if (Object.keys(ctx.subscriptions).length > limits.wsMaxSubscriptionsPerSocket) {
          return [
            new GraphQLError(
              `This socket already has WS_MAX_SUBSCRIPTIONS_PER_SOCKET (${limits.wsMaxSubscriptionsPerSocket}) live operations.`,
              { extensions: { code: 'TOO_MANY_SUBSCRIPTIONS' } },
            ),
          ];
        }
        try {
          // graphql-ws has every payload carry a `query` string: `''` with a hash is hash-only.
          const params = persisted
            ? await persisted.resolve(payload, () => hasScope(ctx.extra.principal, SCOPES.admin))
            : payload;
          const enveloped: Enveloped = yoga.getEnveloped({
            ...ctx,
            wsPrincipal: ctx.extra.principal,
            params,
          } as never);
          const document = enveloped.parse(params.query);
          const errors = enveloped.validate(enveloped.schema, document);
          if (errors.length > 0) return errors;
          const args: ExecutionArgs = {
            schema: enveloped.schema,
            document,
            operationName: params.operationName ?? null,
            variableValues: params.variables ?? null,
            contextValue: await enveloped.contextFactory(),
            rootValue: {
              execute: enveloped.execute,
              subscribe: enveloped.subscribe,
              id,
              connection: ctx.extra,
            } satisfies Operation,
          };
          return args;
        } catch (err) {
          return operationErrors(err, faults);
        }
      },
      execute: (args) => settle(() => (args.rootValue as Operation).execute(args), faults),
      subscribe: (args) => subscribe(args, faults, pulled),
      onError: (_ctx, _id, _payload, errors) => {
        log.debug({ errors }, 'websocket operation error');
      },
    },
    wss,
    log,
    masking,
  );

  return {
    wss,
    /** Closes every socket with 1001 (going away), then the server. */
    async close(): Promise<void> {
      for (const client of wss.clients) client.close(1001, 'Server shutting down');
      await disposable.dispose();
    },
  };
}
