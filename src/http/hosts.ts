import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { isIP } from 'node:net';
import type { Duplex } from 'node:stream';
import { sendJson } from './problem.js';

/**
 * `ALLOWED_HOSTS` (DESIGN §12): a request whose `Host` names another site is refused with 421
 * before anything is served. A page on a site whose DNS name is re-pointed at 127.0.0.1 is
 * same-origin with a local server in the browser; without this it could read the
 * development token from the dashboard and then drive every API. The `Host` is the one thing
 * such a page cannot choose: it is its own name.
 */

/** The name a `Host` header carries, lower case, without port or trailing dot. */
export function hostName(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  const value = header.trim().toLowerCase();
  const bracketed = /^(\[[^\]]*\])(?::\d*)?$/.exec(value);
  if (bracketed) return bracketed[1];
  const name = value.replace(/:\d*$/, '').replace(/\.$/, '');
  return name === '' ? undefined : name;
}

/** The last answer: a client's requests carry the same `Host`, so most are this lookup. */
let last: { allowed: readonly string[]; header: string | undefined; ok: boolean } | undefined;

/** Whether a request with this `Host` header may be served. */
export function hostAllowed(allowed: '*' | readonly string[], header: string | undefined): boolean {
  if (allowed === '*') return true;
  if (last && last.header === header && last.allowed === allowed) return last.ok;
  const name = hostName(header);
  const ok = name !== undefined && allowed.includes(name);
  last = { allowed, header, ok };
  return ok;
}

const MISDIRECTED = Object.freeze({
  type: 'about:blank',
  title: 'Misdirected Request',
  status: 421,
  code: 'MISDIRECTED_REQUEST',
  detail: 'This server does not answer to that host name (see ALLOWED_HOSTS).',
});

/** The 421 of every plain request. */
export function sendMisdirected(res: ServerResponse): void {
  sendJson(res, 421, MISDIRECTED, {}, 'application/problem+json');
}

/**
 * Refuses WebSocket upgrades to names not allowed, ahead of every 'upgrade' listener (the
 * WebSocket server's included), whichever was added first: the upgrade is answered 421 and
 * the socket closed, and no listener ever sees it.
 */
export function guardUpgrades(server: Server, allowed: '*' | readonly string[]): void {
  if (allowed === '*') return;
  const emit = server.emit.bind(server) as (event: string | symbol, ...args: unknown[]) => boolean;
  server.emit = ((event: string | symbol, ...args: unknown[]) => {
    if (event !== 'upgrade') return emit(event, ...args);
    const [req, socket] = args as [IncomingMessage, Duplex];
    if (hostAllowed(allowed, req.headers.host)) return emit(event, ...args);
    const body = JSON.stringify(MISDIRECTED);
    socket.on('error', () => {});
    socket.end(
      [
        'HTTP/1.1 421 Misdirected Request',
        'Content-Type: application/problem+json',
        `Content-Length: ${Buffer.byteLength(body)}`,
        'Cache-Control: no-store',
        'Connection: close',
        '',
        body,
      ].join('\r\n'),
    );
    return true;
  }) as typeof server.emit;
}

/** Whether the peer is this machine (127.0.0.0/8, ::1, or IPv4 loopback mapped into IPv6). */
export function loopbackPeer(req: IncomingMessage): boolean {
  const address = req.socket.remoteAddress ?? '';
  const v4 = address.startsWith('::ffff:') ? address.slice(7) : address;
  if (isIP(v4) === 4) return v4.startsWith('127.');
  return address === '::1';
}
