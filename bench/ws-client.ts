import WebSocket from 'ws';

/**
 * A minimal graphql-ws (graphql-transport-ws) client: enough to subscribe and time frames,
 * cheap enough to hold ten thousand of in one process.
 */
export class GqlSocket {
  private next = 1;
  private readonly handlers = new Map<string, { frame(raw: string): void; complete(): void }>();

  private constructor(readonly socket: WebSocket) {
    socket.on('message', (data) => {
      const raw = data.toString();
      // Route by id without parsing the payload: `{"id":"…","type":…`.
      const match = /"id":"([^"]+)"/.exec(raw);
      const handler = match ? this.handlers.get(match[1]!) : undefined;
      if (!handler) return;
      if (raw.includes('"type":"complete"')) {
        this.handlers.delete(match![1]!);
        handler.complete();
      } else if (raw.includes('"type":"error"')) {
        this.handlers.delete(match![1]!);
        handler.frame(raw);
        handler.complete();
      } else handler.frame(raw);
    });
  }

  static open(url: string, token: string): Promise<GqlSocket> {
    return new Promise((resolve, reject) => {
      const socket = new WebSocket(url, 'graphql-transport-ws', { perMessageDeflate: false });
      const timer = setTimeout(() => {
        socket.terminate();
        reject(new Error('websocket: no connection_ack within 30 s'));
      }, 30_000);
      socket.once('error', reject);
      socket.once('open', () =>
        socket.send(
          JSON.stringify({
            type: 'connection_init',
            payload: { authorization: `Bearer ${token}` },
          }),
        ),
      );
      socket.once('close', (code) =>
        reject(new Error(`websocket closed (${code}) before connection_ack`)),
      );
      socket.once('message', (data) => {
        clearTimeout(timer);
        if (JSON.parse(data.toString()).type !== 'connection_ack')
          return reject(new Error(`websocket: expected connection_ack, got ${data.toString()}`));
        socket.removeAllListeners('close');
        socket.removeAllListeners('error');
        socket.on('error', () => {});
        resolve(new GqlSocket(socket));
      });
    });
  }

  /** Subscribes; `frame` gets every raw `next`/`error` message text, `complete` the end. */
  subscribe(
    query: string,
    variables: Record<string, unknown>,
    frame: (raw: string) => void,
    complete: () => void = () => {},
  ): string {
    const id = String(this.next++);
    this.handlers.set(id, { frame, complete });
    this.socket.send(JSON.stringify({ id, type: 'subscribe', payload: { query, variables } }));
    return id;
  }

  close(): void {
    this.socket.terminate();
  }
}
