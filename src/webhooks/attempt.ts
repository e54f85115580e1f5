import http from 'node:http';
import https from 'node:https';
import { pinnedLookup, resolveChecked } from '../tasks/webhooks/address-guard.js';

/** How much of an answer is read (and dropped) before the connection is closed. */
export const MAX_RESPONSE_BYTES = 64 * 1024;

export interface AttemptRequest {
  url: string;
  headers: Record<string, string>;
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

/** `send`'s answer when a pooled connection turned out closed: send again, on a new one. */
const STALE = -1;

/** An HTTP answer's status, or why none came. */
export type AttemptResult = { statusCode: number } | { statusCode: null; error: string };

function describe(err: unknown, timeoutMs: number): string {
  if (err instanceof Error && (err.name === 'TimeoutError' || err.name === 'AbortError'))
    return err.name === 'TimeoutError'
      ? `no answer within WEBHOOK_TIMEOUT_MS (${timeoutMs} ms)`
      : 'aborted: the process is stopping';
  return err instanceof Error ? err.message : String(err);
}

/** Settles with `promise`, or rejects with the signal's reason once it aborts. */
function abortable<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

/**
 * One POST to a webhook. The host is resolved and checked first, and the connection goes to
 * the checked addresses only; a redirect is an answer like any other (never followed); the
 * body of the answer is read up to MAX_RESPONSE_BYTES and dropped. Never rejects.
 */
export async function attempt(request: AttemptRequest): Promise<AttemptResult> {
  // One controller and one timer an attempt, both let go when it ends: AbortSignal.any with
  // AbortSignal.timeout would keep a timer and a dependent signal alive for the whole timeout.
  const controller = new AbortController();
  const { signal } = controller;
  const timer = setTimeout(
    () => controller.abort(new DOMException('The attempt timed out', 'TimeoutError')),
    request.timeoutMs,
  );
  const onStop = () => controller.abort(request.signal.reason);
  if (request.signal.aborted) onStop();
  else request.signal.addEventListener('abort', onStop, { once: true });
  try {
    const url = new URL(request.url);
    const addresses = await abortable(resolveChecked(url.hostname, request.allowPrivate), signal);
    const body = Buffer.from(request.body);
    const secure = url.protocol === 'https:';
    const send = () =>
      new Promise<number>((resolve, reject) => {
        const req = (secure ? https : http).request(
          url,
          {
            method: 'POST',
            headers: { ...request.headers, 'content-length': String(body.length) },
            lookup: pinnedLookup(addresses),
            agent: request.agents ? request.agents[secure ? 'https' : 'http'] : false,
            signal,
          },
          (res) => {
            // The status decides; the rest of the answer drains in the background, capped
            // (a connection read to its end goes back to the pool), and the timeout's abort
            // ends a body that never finishes.
            resolve(res.statusCode ?? 0);
            let read = 0;
            res.on('data', (chunk: Buffer) => {
              read += chunk.length;
              if (read >= MAX_RESPONSE_BYTES) res.destroy();
            });
            res.on('error', () => {});
          },
        );
        req.on('error', (err: NodeJS.ErrnoException) => {
          if (req.reusedSocket && STALE_REUSE.has(err.code ?? '')) resolve(STALE);
          else reject(err);
        });
        req.end(body);
      });
    let statusCode = await abortable(send(), signal);
    if (statusCode === STALE) statusCode = await abortable(send(), signal);
    if (statusCode === STALE) throw new Error('the connection was reset');
    return { statusCode };
  } catch (err) {
    return { statusCode: null, error: describe(err, request.timeoutMs) };
  } finally {
    clearTimeout(timer);
    request.signal.removeEventListener('abort', onStop);
  }
}
