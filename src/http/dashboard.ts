import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loopbackPeer } from './hosts.js';
import type { RouteHandler } from './server.js';

export interface DashboardOptions {
  /** Signs the page in as this token's principal (development's `dev` token); else a sign-in form. */
  devToken?: string | undefined;
}

interface Asset {
  body: Buffer;
  type: string;
  etag: string;
}

const WEB = fileURLToPath(new URL('../../web/', import.meta.url));
/** graphql-ws's browser build (ES modules), served from the installed package: no CDN. */
const GRAPHQL_WS = dirname(fileURLToPath(import.meta.resolve('graphql-ws/client')));

const TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.html': 'text/html; charset=utf-8',
};

function asset(file: string): Asset {
  const body = readFileSync(file);
  const type = TYPES[file.slice(file.lastIndexOf('.'))] ?? 'application/octet-stream';
  const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`;
  return { body, type, etag };
}

const escapeAttribute = (text: string) => text.replace(/[&"<>]/g, (c) => `&#${c.charCodeAt(0)};`);

/**
 * The dashboard (§13): `GET /` is the page, `/dashboard/*` its modules and styles, read once at
 * start. The page talks to `/graphql` only. Its policy allows nothing but this origin, and the
 * development token rides in a meta tag, so no inline script is ever needed.
 */
export function createDashboardHandler(options: DashboardOptions = {}): RouteHandler {
  const assets = new Map<string, Asset>();
  // Every module and stylesheet of web/ (the page's own files, nothing from elsewhere).
  for (const name of readdirSync(WEB).filter((n) => /^[\w-]+\.(js|css)$/.test(n)))
    assets.set(`/dashboard/${name}`, asset(join(WEB, name)));
  for (const name of readdirJs(GRAPHQL_WS))
    assets.set(`/dashboard/vendor/graphql-ws/${name}`, asset(join(GRAPHQL_WS, name)));
  const meta = options.devToken
    ? `<meta name="taskhandle-dev-token" content="${escapeAttribute(options.devToken)}">`
    : '';
  const html = readFileSync(join(WEB, 'index.html'), 'utf8');
  const page = Buffer.from(html.replace('<!--dev-token-->', meta));
  // The token is for the person at this machine: another peer gets the sign-in form.
  const remotePage = Buffer.from(html.replace('<!--dev-token-->', ''));

  return async (req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    const found = path === '/' ? undefined : assets.get(path ?? '');
    if (path !== '/' && !found) return false;
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD' }).end();
      return true;
    }
    const headers: Record<string, string> = {
      'x-content-type-options': 'nosniff',
      'referrer-policy': 'no-referrer',
    };
    if (!found) {
      const body = loopbackPeer(req) ? page : remotePage;
      Object.assign(headers, {
        'content-type': TYPES['.html'],
        // The page may carry a token: never stored by a cache.
        'cache-control': 'no-store',
        'content-security-policy':
          "default-src 'self'; connect-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
        'content-length': String(body.length),
      });
      res.writeHead(200, headers).end(req.method === 'HEAD' ? undefined : body);
      return true;
    }
    Object.assign(headers, { etag: found.etag, 'cache-control': 'no-cache' });
    if (req.headers['if-none-match'] === found.etag) {
      res.writeHead(304, headers).end();
      return true;
    }
    headers['content-type'] = found.type;
    headers['content-length'] = String(found.body.length);
    res.writeHead(200, headers).end(req.method === 'HEAD' ? undefined : found.body);
    return true;
  };
}

function readdirJs(dir: string): string[] {
  // client.js and the chunks it imports; nothing else of the package is needed by a browser.
  const client = readFileSync(join(dir, 'client.js'), 'utf8');
  const chunks = [...client.matchAll(/from '\.\/([\w-]+\.js)'/g)].map((m) => m[1] as string);
  return ['client.js', ...new Set(chunks)];
}
