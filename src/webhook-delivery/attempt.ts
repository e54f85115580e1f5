import http from 'node:http';
import https from 'node:https';
import {
  type CheckedAddress,
  pinnedLookup,
  resolveChecked,
} from '../tasks/webhooks/address-guard.js';

/** How much of an answer is read (and dropped) before the connection is closed. */
export const MAX_RESPONSE_BYTES = 64 * 1024;

export interface AttemptRequest {
  url: string;
  headers: Record<string, string>;
  /**
   * What is sent (and was signed). A string, not a Buffer: Node writes a string body in one
   * write with the head of the request, a Buffer in a second.
   */
  body: string;
  timeoutMs: number;
  allowPrivate: boolean;
  /** Aborts the attempt (a stop past its grace). */
  signal: AbortSignal;
  /** Keep-alive connections to reuse (one pool per process); none: a connection per attempt. */
  agents?: Agents | undefined;
}

export interface Agents {
  http: http.Agent;
  https: https.Agent;
}

/**
 * Pools for webhook connections. An idle connection is closed after 4 s, before the 5 s a
 * Node server keeps one open, so a reused connection is rarely one the receiver just closed
 * (and that case is retried at once on a new one, see `attempt`).
 */
export function keepAliveAgents(maxSockets: number): Agents {
  const options = { keepAlive: true, maxSockets, maxFreeSockets: maxSockets, timeout: 4_000 };
  return { http: new http.Agent(options), https: new https.Agent(options) };
}

/** A connection the receiver closed while it sat idle in the pool: nothing was delivered. */
const STALE_REUSE = new Set(['ECONNRESET', 'EPIPE']);

/** An HTTP answer's status, or why none came. */
export type AttemptResult = { statusCode: number } | { statusCode: null; error: string };

const STOPPED = 'aborted: the process is stopping';

/**
 * One POST to a webhook. The host is resolved and checked first, and the connection goes to
 * the checked addresses only; a redirect is an answer like any other (never followed); the
 * body of the answer is read up to MAX_RESPONSE_BYTES and dropped. Never rejects.
 */
export function attempt(request: AttemptRequest): Promise<AttemptResult> {
  if (request.signal.aborted) return Promise.resolve({ statusCode: null, error: STOPPED });
  return new Promise<AttemptResult>((resolve) => new Attempt(request, resolve).start());
}

/**
 * An attempt under way. One timer bounds all of it, the answer's body included: the timeout
 * and a stop destroy the request directly, where an AbortController handed to http.request
 * would add a listener and a stream wrapper to every attempt. Methods, not closures made for
 * each attempt (tsx names every named closure as it is made).
 */
class Attempt {
  private req: http.ClientRequest | undefined;
  private settled = false;
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly request: AttemptRequest,
    private readonly resolve: (result: AttemptResult) => void,
  ) {
    this.timer = setTimeout(timeUp, request.timeoutMs, this);
    request.signal.addEventListener('abort', this, { once: true });
  }

  /** The process stops (the attempt listens to the stop signal as an EventListener object). */
  handleEvent(): void {
    this.fail(STOPPED);
  }

  timedOut(): void {
    this.fail(`no answer within WEBHOOK_TIMEOUT_MS (${this.request.timeoutMs} ms)`);
  }

  start(): void {
    let url: URL;
    try {
      url = new URL(this.request.url);
    } catch (err) {
      this.fail(messageOf(err));
      return;
    }
    resolveChecked(url.hostname, this.request.allowPrivate).then(
      (addresses) => this.send(url, addresses, false),
      (err: unknown) => this.fail(messageOf(err)),
    );
  }

  private settle(result: AttemptResult): void {
    if (this.settled) return;
    this.settled = true;
    this.request.signal.removeEventListener('abort', this);
    this.resolve(result);
  }

  /** Ends the attempt with `error` (unless it has its answer already) and its connection. */
  fail(error: string): void {
    this.settle({ statusCode: null, error });
    clearTimeout(this.timer);
    this.req?.destroy();
  }

  private send(url: URL, addresses: CheckedAddress[], again: boolean): void {
    if (this.settled) return;
    const { request } = this;
    const secure = url.protocol === 'https:';
    // Headers as a list: written as given, without a setHeader (and its checks) for each.
    const headers = [
      'host',
      url.host,
      'content-length',
      String(Buffer.byteLength(request.body)),
      ...Object.entries(request.headers).flat(),
    ];
    const req = (secure ? https : http).request({
      protocol: url.protocol,
      // As urlToHttpOptions gives it: an IPv6 literal without its brackets.
      hostname: url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname,
      port: url.port,
      path: url.pathname + url.search,
      method: 'POST',
      headers,
      lookup: pinnedLookup(addresses),
      agent: request.agents ? request.agents[secure ? 'https' : 'http'] : false,
    });
    this.req = req;
    req.on('response', (res) => this.answered(res));
    req.on('error', (err: NodeJS.ErrnoException) => {
      // A connection the receiver closed while it sat idle in the pool: nothing was
      // delivered, so it is sent once more, on a new connection.
      const stale = req.reusedSocket && STALE_REUSE.has(err.code ?? '');
      if (stale && !again) this.send(url, addresses, true);
      else this.fail(stale ? 'the connection was reset' : messageOf(err));
    });
    req.end(request.body);
  }

  /**
   * The status decides; the rest of the answer drains in the background, capped in size (a
   * connection read to its end goes back to the pool) and in time (the attempt's timer
   * closes a connection whose answer never finishes).
   */
  private answered(res: http.IncomingMessage): void {
    this.settle({ statusCode: res.statusCode ?? 0 });
    let read = 0;
    res.on('data', (chunk: Buffer) => {
      read += chunk.length;
      if (read >= MAX_RESPONSE_BYTES) res.destroy();
    });
    res.on('error', () => {});
    res.on('close', () => clearTimeout(this.timer));
  }
}

function timeUp(attempt: Attempt): void {
  attempt.timedOut();
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
