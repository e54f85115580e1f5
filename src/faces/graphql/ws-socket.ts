import type { Duplex } from 'node:stream';
import { CloseCode, handleProtocols, makeServer, type ServerOptions } from 'graphql-ws';
import type { Logger } from 'pino';
import { type RawData, WebSocket, type WebSocketServer } from 'ws';
import { coerceError } from '../../errors.js';
import type { ErrorMasking } from './errors.js';

/** Messages only a server sends (graphql-transport-ws). */
const SERVER_ONLY = new Set(['connection_ack', 'next', 'error']);

function messageType(text: string): unknown {
  try {
    return (JSON.parse(text) as { type?: unknown } | null)?.type;
  } catch {
    return undefined; // graphql-ws refuses it itself, with 4400
  }
}

/** Connections whose writes wait for the end of this tick; one tick task for all of them. */
let corked: Connection[] = [];
const uncorkAll = () => {
  const due = corked;
  corked = [];
  for (const connection of due) connection.uncork();
};
/**
 * The uncork waits for the promises already under way, not only for this tick: a `tick`
 * queued from a microtask runs once every microtask is done, those queued meanwhile too, so a
 * final `next` written from a macrotask (the hub's hand-out) leaves with the `complete` that
 * graphql-ws sends a few promise steps later, in one write.
 */
const uncorkAfterMicrotasks = () => process.nextTick(uncorkAll);
const initTimeout = (connection: Connection) =>
  connection.close(CloseCode.ConnectionInitialisationTimeout, 'Connection initialisation timeout');

/**
 * One socket as graphql-ws's server sees it (`send`, `close`, `onMessage`), and its `ctx.extra`.
 * Methods, not closures: ten thousand sockets hold one prototype.
 */
export class Connection {
  /** graphql-ws's handler of this socket's messages. */
  handle: ((data: string) => Promise<void>) | undefined;
  /** graphql-ws's handler of this socket's close. */
  closed: ((code: number, reason: string) => Promise<void>) | undefined;
  /** Until `connection_init` arrives (graphql-ws's `connectionInitWaitTimeout`). */
  initWait: NodeJS.Timeout | undefined;
  private corked = false;

  constructor(
    readonly socket: WebSocket,
    private readonly tcp: Duplex,
  ) {}

  get protocol(): string {
    return this.socket.protocol;
  }

  /**
   * Sends one text frame; resolves once written (as graphql-ws's own glue does). What `write`
   * held back leaves with it: graphql-ws's `complete` ends a final `next`'s wait.
   */
  send(data: string): Promise<void> {
    return new Promise((resolve, reject) => {
      if (this.socket.readyState !== WebSocket.OPEN) return resolve();
      this.socket.send(data, (err) => (err ? reject(err) : resolve()));
      this.uncork();
    });
  }

  close(code?: number, reason?: string): void {
    this.socket.close(code, reason);
  }

  onMessage(handle: (data: string) => Promise<void>): void {
    this.handle = handle;
  }

  /**
   * Sends one text frame without waiting for it to be written. It leaves at the end of the
   * tick, or with the next frame `send` writes: a final `next` and graphql-ws's `complete`
   * after it leave in one write, and a write, not a frame, is what a socket costs the process. Resolves at once unless the
   * socket's buffer is past its high-water mark, then once it drains or closes, so a slow
   * client holds a bounded buffer; undefined: nothing to wait for.
   */
  write(frame: string): Promise<void> | undefined {
    if (this.socket.readyState !== WebSocket.OPEN) return undefined;
    if (!this.corked) {
      this.corked = true;
      this.tcp.cork();
      if (corked.push(this) === 1) queueMicrotask(uncorkAfterMicrotasks);
    }
    this.socket.send(frame);
    if (!this.tcp.writableNeedDrain) return undefined;
    return new Promise((resolve) => {
      const done = () => {
        this.tcp.off('drain', done);
        this.tcp.off('close', done);
        resolve();
      };
      this.tcp.on('drain', done);
      this.tcp.on('close', done);
    });
  }

  /** @internal the end of a tick's writes, or of a final `next` and its `complete`. */
  uncork(): void {
    if (!this.corked) return;
    this.corked = false;
    this.tcp.uncork();
  }
}

/**
 * graphql-ws's server (`makeServer`) on a `ws` server: the same protocol, close codes and
 * keep-alive as graphql-ws's own glue (`graphql-ws/use/ws`), holding less per socket, which
 * matters at ten thousand subscribers:
 * - `ctx.extra` is the socket's `Connection`, not the upgrade request and its headers;
 * - one timer pings every socket each `keepAliveMs` and terminates those that did not answer
 *   the previous ping, instead of an interval, a timeout and a listener per socket;
 * - listeners are shared, not made per socket, and the connection_init timer goes once
 *   connection_init arrives;
 * - a client that sends a message only a server may send is closed with 4400 (graphql-ws
 *   throws on those, and its glue answered the throw with 4500 and the error's message: a
 *   client's mistake reported as the server's).
 * Anything else a handler throws closes the socket with 4500, as graphql-ws's glue does, with
 * a reason masked by the GraphQL face's one rule (`masking`), not graphql-ws's.
 */
export function serveGraphqlWs<P extends Record<string, unknown> | undefined, E>(
  options: ServerOptions<P, E & Connection>,
  wss: WebSocketServer,
  log: Logger,
  masking: ErrorMasking,
  keepAliveMs = 12_000,
): { dispose(): Promise<void> } {
  // The init timeout is kept here, so that a socket's timer goes once connection_init arrives.
  const initWaitMs = options.connectionInitWaitTimeout ?? 3_000;
  const server = makeServer({ ...options, connectionInitWaitTimeout: 0 });
  wss.options.handleProtocols = handleProtocols;
  const connections = new WeakMap<WebSocket, Connection>();
  /** Sockets pinged by the last sweep that have not answered yet. */
  const unanswered = new WeakSet<WebSocket>();
  const sweep = setInterval(() => {
    for (const socket of wss.clients) {
      if (socket.readyState !== WebSocket.OPEN) continue;
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
    socket.close(CloseCode.InternalServerError, masking.closeReason(err));
  };
  function onError(this: WebSocket, err: Error) {
    fail(this, err);
  }
  function onPong(this: WebSocket) {
    unanswered.delete(this);
  }
  function onMessage(this: WebSocket, data: RawData) {
    const text = String(data);
    const type = messageType(text);
    if (SERVER_ONLY.has(type as string))
      return this.close(CloseCode.BadRequest, 'Invalid message received');
    const connection = connections.get(this);
    if (!connection) return;
    if (type === 'connection_init' && connection.initWait) {
      clearTimeout(connection.initWait);
      connection.initWait = undefined;
    }
    connection.handle?.(text).catch((err: unknown) => fail(this, err));
  }
  function onClose(this: WebSocket, code: number, reason: Buffer) {
    const connection = connections.get(this);
    clearTimeout(connection?.initWait);
    connection
      ?.closed?.(code, String(reason))
      .catch((err: unknown) =>
        log.error({ err: coerceError(err) }, 'unexpected error closing a WebSocket'),
      );
  }

  wss.once('error', (err) => {
    log.error({ err: coerceError(err) }, 'unexpected error on the WebSocket server');
    for (const client of wss.clients)
      client.close(CloseCode.InternalServerError, masking.closeReason(err));
  });
  wss.on('connection', (socket, request) => {
    socket.once('error', onError);
    socket.on('pong', onPong);
    socket.on('message', onMessage);
    socket.once('close', onClose);
    const connection = new Connection(socket, request.socket);
    connections.set(socket, connection);
    if (initWaitMs > 0 && Number.isFinite(initWaitMs))
      connection.initWait = setTimeout(initTimeout, initWaitMs, connection);
    connection.closed = server.opened(connection, connection as E & Connection);
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
