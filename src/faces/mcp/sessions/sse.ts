import type { ServerResponse } from 'node:http';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';

/**
 * Headers go out with the first event, or after this long without one: an answer that is
 * ready at once costs one write to the socket instead of two (headers, then the event), and a
 * client waiting on a long call still learns within a second that its request was taken.
 */
const HEADERS_WITHIN_MS = 1_000;
/** A comment this often keeps proxies and idle timeouts from cutting a quiet stream. */
const KEEP_ALIVE_MS = 15_000;

/** As the SDK's transport sends them, in the order the wire has always shown. */
const HEADERS = {
  'cache-control': 'no-cache, no-transform',
  connection: 'keep-alive',
  'content-type': 'text/event-stream',
};

const frame = (message: JSONRPCMessage) => `event: message\ndata: ${JSON.stringify(message)}\n\n`;

/**
 * One Server-Sent Events response of the Streamable HTTP transport: JSON-RPC messages as
 * `message` events, a keep-alive comment while it is quiet, ended by its owner or when the
 * client goes away (`onGone`, once, if it was not ended first).
 */
export class SseStream {
  private ended = false;
  private timer: NodeJS.Timeout;
  private readonly headers: Record<string, string>;

  constructor(
    private readonly res: ServerResponse,
    sessionId: string | undefined,
    options: { flushNow: boolean; onGone?: () => void },
  ) {
    this.headers =
      sessionId === undefined
        ? { ...HEADERS, 'x-accel-buffering': 'no' }
        : { ...HEADERS, 'mcp-session-id': sessionId, 'x-accel-buffering': 'no' };
    if (options.flushNow) this.flush();
    this.timer = setTimeout(
      () => this.tick(),
      options.flushNow ? KEEP_ALIVE_MS : HEADERS_WITHIN_MS,
    );
    this.timer.unref();
    res.once('close', () => {
      if (this.ended) return;
      this.stop();
      options.onGone?.();
    });
  }

  /** Whether events still reach the client. */
  get open(): boolean {
    return !this.ended;
  }

  /** Sends one message as an event; false if the stream has ended. */
  write(message: JSONRPCMessage): boolean {
    if (this.ended) return false;
    if (!this.res.headersSent) this.res.writeHead(200, this.headers);
    this.res.write(frame(message));
    return true;
  }

  /** Ends the stream, with `last` as its final event: one write if nothing was sent yet. */
  end(last?: JSONRPCMessage): void {
    if (this.ended) return;
    this.stop();
    if (this.res.headersSent) {
      this.res.end(last === undefined ? undefined : frame(last));
      return;
    }
    const text = last === undefined ? '' : frame(last);
    this.res.writeHead(200, { ...this.headers, 'content-length': String(Buffer.byteLength(text)) });
    this.res.end(text);
  }

  private flush(): void {
    this.res.writeHead(200, this.headers);
    this.res.flushHeaders();
  }

  private tick(): void {
    if (this.ended) return;
    if (this.res.headersSent) this.res.write(': keepalive\n\n');
    else this.flush();
    this.timer = setTimeout(() => this.tick(), KEEP_ALIVE_MS);
    this.timer.unref();
  }

  private stop(): void {
    this.ended = true;
    clearTimeout(this.timer);
  }
}
