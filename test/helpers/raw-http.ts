import { connect, type Socket } from 'node:net';

/** One HTTP/1.1 response as read off a raw socket. */
export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/**
 * A raw TCP connection to the server, for what fetch hides: keep-alive, pipelining, a body
 * that never ends, the server closing the socket. Responses are parsed as they arrive
 * (Content-Length bodies only, which is what the server sends on errors).
 */
export class RawConnection {
  private buffer = Buffer.alloc(0);
  private waiters: Array<() => void> = [];
  readonly socket: Socket;
  /** Resolves when the server ends or closes the connection; `reset` when it was not a clean end. */
  readonly closed: Promise<{ reset: boolean }>;

  constructor(url: string) {
    const { hostname, port } = new URL(url);
    this.socket = connect(Number(port), hostname);
    let reset = false;
    this.socket.on('data', (chunk: Buffer) => {
      this.buffer = Buffer.concat([this.buffer, chunk]);
      this.wake();
    });
    this.socket.on('error', () => {
      reset = true;
    });
    this.closed = new Promise((resolve) => {
      this.socket.on('close', () => {
        this.wake();
        resolve({ reset });
      });
    });
  }

  private wake(): void {
    for (const waiter of this.waiters.splice(0)) waiter();
  }

  /** Writes; resolves false when the server had already closed the socket. */
  write(data: string | Buffer): Promise<boolean> {
    return new Promise((resolve) => {
      if (this.socket.destroyed || !this.socket.writable) return resolve(false);
      this.socket.write(data, (err) => resolve(!err));
    });
  }

  /** The next complete response; undefined when the connection closes first. */
  async response(): Promise<RawResponse | undefined> {
    for (;;) {
      const end = this.buffer.indexOf('\r\n\r\n');
      if (end >= 0) {
        const head = this.buffer.subarray(0, end).toString('latin1').split('\r\n');
        const status = Number(head[0]?.split(' ')[1]);
        const headers: Record<string, string> = {};
        for (const line of head.slice(1)) {
          const colon = line.indexOf(':');
          headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
        }
        const length = Number(headers['content-length'] ?? 0);
        if (this.buffer.length >= end + 4 + length) {
          const body = this.buffer.subarray(end + 4, end + 4 + length).toString('utf8');
          this.buffer = this.buffer.subarray(end + 4 + length);
          return { status, headers, body };
        }
      }
      if (this.socket.destroyed) return undefined;
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
  }

  close(): void {
    this.socket.destroy();
  }
}
