import type { IncomingMessage, ServerResponse } from 'node:http';

/**
 * CORS for every face, answered before any handler (DESIGN §12, `CORS_ORIGINS`): a listed
 * origin is echoed back, `*` lets any origin read, never with credentials: the server never
 * sends `Access-Control-Allow-Credentials`, since bearer tokens travel in a header a browser
 * only sends when the page's own script adds it.
 */

const METHODS = 'GET, POST, DELETE, OPTIONS';
/** What a page's script may read besides the simple headers: the handle's links and pacing. */
export const EXPOSED_HEADERS = 'Location, Retry-After, Link, WWW-Authenticate, Mcp-Session-Id';
/**
 * The Access-Control-Allow-Origin for `origin`, or undefined when it may not read answers. A
 * permitted origin is echoed back even under `*`, which means the same to a browser for a
 * request without credentials.
 */
export function allowedOrigin(
  origin: string | undefined,
  origins: '*' | readonly string[],
): string | undefined {
  if (origin === undefined) return undefined;
  return origins === '*' || origins.includes(origin) ? origin : undefined;
}

const TOKEN_LIST = /^[\w-]+(\s*,\s*[\w-]+)*$/;

/**
 * Adds CORS headers for the request's origin; answers a preflight itself.
 * @returns true when the request was a preflight, answered here
 */
export function applyCors(
  req: IncomingMessage,
  res: ServerResponse,
  origins: '*' | readonly string[],
): boolean {
  const origin = req.headers.origin;
  const allowed = allowedOrigin(origin, origins);
  res.setHeader('vary', 'Origin');
  if (allowed) {
    res.setHeader('access-control-allow-origin', allowed);
    res.setHeader('access-control-expose-headers', EXPOSED_HEADERS);
  }
  const preflight =
    req.method === 'OPTIONS' &&
    origin !== undefined &&
    req.headers['access-control-request-method'] !== undefined;
  if (!preflight) return false;
  if (allowed) {
    res.setHeader('access-control-allow-methods', METHODS);
    const requested = req.headers['access-control-request-headers'];
    if (requested && TOKEN_LIST.test(requested))
      res.setHeader('access-control-allow-headers', requested);
    res.setHeader('access-control-max-age', '600');
  }
  // A refused origin gets a plain 204 without allow headers: its browser blocks the request.
  res.writeHead(204, { 'content-length': '0' });
  res.end();
  return true;
}
