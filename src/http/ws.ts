import type { Server } from 'node:http';
import type { ExecutionArgs } from 'graphql';
import { CloseCode } from 'graphql-ws';
import { useServer } from 'graphql-ws/use/ws';
import type { YogaServerInstance } from 'graphql-yoga';
import type { Logger } from 'pino';
import { WebSocketServer, type WebSocket } from 'ws';
import { authenticate } from '../auth/authenticate.js';
import type { Principal } from '../auth/principal.js';
import type { TokenVerifier } from '../auth/tokens.js';
import type { Context } from '../graphql/builder.js';
import type { ServerContext } from './yoga.js';

type Extra = {
  principal?: Principal;
  expiry?: NodeJS.Timeout;
};

type Enveloped = ReturnType<YogaServerInstance<ServerContext, Context>['getEnveloped']>;

/**
 * graphql-ws on `/graphql`. A socket authenticates once, in `connection_init`
 * (`connectionParams.authorization`, the same `Bearer …` string as over HTTP), is closed with
 * 4403 without a valid token and again when the token expires. Every operation goes through
 * yoga's envelop, so masking and the schema's authorization apply as over HTTP.
 */
export function attachWebSockets(server: Server, yoga: YogaServerInstance<ServerContext, Context>, verifier: TokenVerifier, log: Logger) {
  const wss = new WebSocketServer({ server, path: '/graphql' });
  const disposable = useServer<Record<string, unknown> | undefined, Extra>(
    {
      onConnect: async (ctx) => {
        const raw = ctx.connectionParams?.authorization;
        const header = typeof raw === 'string' && !/^bearer\s/i.test(raw) ? `Bearer ${raw}` : (raw as string | undefined);
        const { principal } = await authenticate(verifier, header);
        if (!principal) return false; // graphql-ws closes with 4403 Forbidden
        ctx.extra.principal = principal;
        if (principal.expiresAt !== undefined) {
          const socket = (ctx.extra as unknown as { socket: WebSocket }).socket;
          const ms = Math.min(2 ** 31 - 1, principal.expiresAt - Date.now());
          ctx.extra.expiry = setTimeout(() => socket.close(CloseCode.Forbidden, 'Forbidden: token expired'), Math.max(0, ms));
        }
        return true;
      },
      onClose: (ctx) => clearTimeout(ctx.extra.expiry),
      onSubscribe: async (ctx, _id, payload) => {
        const enveloped: Enveloped = yoga.getEnveloped({
          ...ctx,
          wsPrincipal: ctx.extra.principal,
          params: payload,
        } as never);
        const document = enveloped.parse(payload.query);
        const errors = enveloped.validate(enveloped.schema, document);
        if (errors.length > 0) return errors;
        const args: ExecutionArgs = {
          schema: enveloped.schema,
          document,
          operationName: payload.operationName ?? null,
          variableValues: payload.variables ?? null,
          contextValue: await enveloped.contextFactory(),
          rootValue: { execute: enveloped.execute, subscribe: enveloped.subscribe },
        };
        return args;
      },
      execute: (args) => (args.rootValue as { execute: Enveloped['execute'] }).execute(args),
      subscribe: (args) => (args.rootValue as { subscribe: Enveloped['subscribe'] }).subscribe(args),
      onError: (_ctx, _id, _payload, errors) => {
        log.debug({ errors }, 'websocket operation error');
      },
    },
    wss,
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
