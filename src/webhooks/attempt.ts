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

const timedOut = (timeoutMs: number) => `no answer within WEBHOOK_TIMEOUT_MS (${timeoutMs} ms)`;
const STOPPED = 'aborted: the process is stopping';

/**
 * One POST to a webhook. The host is resolved and checked first, and the connection goes to
 * the checked addresses only; a redirect is an answer like any other (never followed); the
 * body of the answer is read up to MAX_RESPONSE_BYTES and dropped. Never rejects.
 *
 * One timer and one promise an attempt: the timeout and a stop destroy the request (or end
 * the wait for the address check) directly, where an AbortController handed to http.request
 * would add a listener and a stream wrapper to every attempt.
 */
export function attempt(request: AttemptRequest): Promise<AttemptResult> {
  const { signal, timeoutMs } = request;
  if (signal.aborted) return Promise.resolve({ statusCode: null, error: STOPPED });
  return new Promise<AttemptResult>((resolve) => {
    let req: http.ClientRequest | undefined;
    let settled = false;
    const settle = (result: AttemptResult) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal.removeEventListener('abort', onStop);
      resolve(result);
    };
    const fail = (error: string) => {
      settle({ statusCode: null, error });
      req?.destroy();
    };
    const timer = setTimeout(() => fail(timedOut(timeoutMs)), timeoutMs);
    const onStop = () => fail(STOPPED);
    signal.addEventListener('abort', onStop, { once: true });
    let url: URL;
    try {
      url = new URL(request.url);
    } catch (err) {
      fail(messageOf(err));
      return;
    }
    const send = (addresses: CheckedAddress[], again: boolean) => {
      if (settled) return;
      const secure = url.protocol === 'https:';
      // Headers as a list: written as given, without a setHeader (and its checks) for each.
      const headers = [
        'host',
        url.host,
        'content-length',
        String(Buffer.byteLength(request.body)),
        ...Object.entries(request.headers).flat(),
      ];
      const current = (secure ? https : http).request({
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
      req = current;
      current.on('response', (res) => {
        // The status decides; the rest of the answer drains in the background, capped (a
        // connection read to its end goes back to the pool), and the timeout ends a body
        // that never finishes.
        settle({ statusCode: res.statusCode ?? 0 });
        let read = 0;
        res.on('data', (chunk: Buffer) => {
          read += chunk.length;
          if (read >= MAX_RESPONSE_BYTES) res.destroy();
        });
        res.on('end', () => clearTimeout(drainTimer));
        res.on('error', () => {});
        res.on('close', () => clearTimeout(drainTimer));
        const drainTimer = setTimeout(() => res.destroy(), timeoutMs);
        drainTimer.unref();
      });
      current.on('error', (err: NodeJS.ErrnoException) => {
        // A connection the receiver closed while it sat idle in the pool: nothing was
        // delivered, so it is sent once more, on a new connection.
        if (current.reusedSocket && STALE_REUSE.has(err.code ?? '') && !again)
          send(addresses, true);
        else if (current.reusedSocket && STALE_REUSE.has(err.code ?? ''))
          fail('the connection was reset');
        else fail(messageOf(err));
      });
      current.end(request.body);
    };
    resolveChecked(url.hostname, request.allowPrivate).then(
      (addresses) => send(addresses, false),
      (err: unknown) => fail(messageOf(err)),
    );
  });
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
