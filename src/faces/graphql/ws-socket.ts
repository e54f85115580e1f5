import { CloseCode, handleProtocols, makeServer, type ServerOptions } from 'graphql-ws';
import type { Logger } from 'pino';
import type { RawData, WebSocket, WebSocketServer } from 'ws';
import { coerceError } from '../../errors.js';

/** What graphql-ws's hooks see of a socket (`ctx.extra`): the socket, and no more. */
export interface SocketExtra {
  readonly socket: WebSocket;
}

/** Messages only a server sends (graphql-transport-ws). */
const SERVER_ONLY = new Set(['connection_ack', 'next', 'error']);

function messageType(text: string): unknown {
  try {
    return (JSON.parse(text) as { type?: unknown } | null)?.type;
  } catch {
    return undefined; // graphql-ws refuses it itself, with 4400
  }
}

const internalError = (err: unknown) => {
  const reason = err instanceof Error ? err.message : String(err);
  return process.env.NODE_ENV === 'production' || reason.length >= 124
    ? 'Internal server error'
    : reason;
};

/** Sends one text frame; resolves once written (as graphql-ws's own glue does). */
export function sendFrame(socket: WebSocket, data: string): Promise<void> {
  return new Promise((resolve, reject) => {
    if (socket.readyState !== socket.OPEN) return resolve();
    socket.send(data, (err) => (err ? reject(err) : resolve()));
  });
}

/**
 * graphql-ws's server (`makeServer`) on a `ws` server: the same protocol, close codes and
 * keep-alive as graphql-ws's own glue (`graphql-ws/use/ws`), holding less per socket, which
 * matters at ten thousand subscribers:
 * - `ctx.extra` holds the socket only, not the upgrade request and its headers;
 * - one timer pings every socket each `keepAliveMs` and terminates those that did not answer
 *   the previous ping, instead of an interval, a timeout and a listener per socket;
 * - a client that sends a message only a server may send is closed with 4400 (graphql-ws
 *   throws on those, and its glue answered the throw with 4500 and the error's message: a
 *   client's mistake reported as the server's).
 * Anything else a handler throws closes the socket with 4500, as graphql-ws's glue does.
 */
export function serveGraphqlWs<P extends Record<string, unknown> | undefined, E>(
  options: ServerOptions<P, E & SocketExtra>,
  wss: WebSocketServer,
  log: Logger,
  keepAliveMs = 12_000,
): { dispose(): Promise<void> } {
  const server = makeServer(options);
  wss.options.handleProtocols = handleProtocols;
  /** Sockets pinged by the last sweep that have not answered yet. */
  const unanswered = new WeakSet<WebSocket>();
  const answered = function (this: WebSocket) {
    unanswered.delete(this);
  };
  const sweep = setInterval(() => {
    for (const socket of wss.clients) {
      if (socket.readyState !== socket.OPEN) continue;
      if (unanswered.has(socket)) {
        socket.terminate();
        continue;
      }
      unanswered.add(socket);
      socket.ping();
    }
  }, keepAliveMs);
  sweep.unref();

  const fail = (socket: WebSocket, err: unknown) => {
    log.error({ err: coerceError(err) }, 'unexpected error on a WebSocket');
    socket.close(CloseCode.InternalServerError, internalError(err));
  };
  wss.once('error', (err) => {
    log.error({ err: coerceError(err) }, 'unexpected error on the WebSocket server');
    for (const client of wss.clients)
      client.close(CloseCode.InternalServerError, internalError(err));
  });
  wss.on('connection', (socket) => {
    socket.once('error', (err) => fail(socket, err));
    socket.on('pong', answered);
    const extra = { socket } as E & SocketExtra;
    const closed = server.opened(
      {
        protocol: socket.protocol,
        send: (data) => sendFrame(socket, data),
        close: (code, reason) => socket.close(code, reason),
        onMessage: (handle) =>
          socket.on('message', (data: RawData) => {
            const text = String(data);
            if (SERVER_ONLY.has(messageType(text) as string))
              return socket.close(CloseCode.BadRequest, 'Invalid message received');
            handle(text).catch((err: unknown) => fail(socket, err));
          }),
      },
      extra,
    );
    socket.once('close', (code, reason) => {
      closed(code, String(reason)).catch((err: unknown) =>
        log.error({ err: coerceError(err) }, 'unexpected error closing a WebSocket'),
      );
    });
  });

  return {
    async dispose() {
      clearInterval(sweep);
      for (const client of wss.clients) client.close(1001, 'Going away');
      wss.removeAllListeners();
      await new Promise<void>((resolve, reject) =>
        wss.close((err) => (err ? reject(err) : resolve())),
      );
    },
  };
}
