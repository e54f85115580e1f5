import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { promisify } from 'node:util';
import { brotliCompress, constants, gzip } from 'node:zlib';
import { loopbackPeer } from '../../http/hosts.js';
import { sendProblem } from '../../http/problem.js';
import { sendMethodNotAllowed } from '../../http/refusal.js';
import type { RouteHandler } from '../../http/server.js';

export interface GraphiQLOptions {
  /** Pre-fills the Authorization header (development's `dev` token). */
  devToken?: string | undefined;
}

const PAGE_PATHS = new Set(['/graphql', '/graphql/']);
const ASSETS = '/graphql/graphiql/';
const BOOT = readFileSync(new URL('../../../web/graphiql/boot.js', import.meta.url));

const DEFAULT_QUERY = `# Run Start, then copy the "id" it answers into the Variables pane below as
#   { "id": "<the id>" }
# and run Poll, Follow or Cancel. The task sleeps 30 s in 30 steps: time enough to watch it.
mutation Start {
  startTask(input: { kind: "sleep", input: { ms: 30000, steps: 30 } }) {
    id status progress pollIntervalMs createdAt expiresAt
  }
}

query Poll($id: ID!) {
  task(id: $id) { id status progress statusMessage version result error { code message } }
}

subscription Follow($id: ID!) {
  taskUpdated(id: $id) { id status progress version result }
}

mutation Cancel($id: ID!) {
  cancelTask(id: $id) { id status version }
}

query List {
  tasks(first: 10) { edges { cursor node { id kind status createdAt } } pageInfo { hasNextPage endCursor } }
}
`;

type Encoding = 'br' | 'gzip';

/** One file of GraphiQL, at a URL named by its content, so a browser may keep it for good. */
class Asset {
  readonly etag: string;
  readonly path: string;
  private readonly compressed = new Map<Encoding, Promise<Buffer>>();

  constructor(
    name: string,
    extension: string,
    readonly type: string,
    readonly body: Buffer,
  ) {
    const hash = createHash('sha256').update(body).digest('base64url').slice(0, 16);
    this.etag = `"${hash}"`;
    this.path = `${ASSETS}${name}.${hash}.${extension}`;
  }

  /** The body in `encoding`, compressed once, off the event loop, on first demand. */
  encoded(encoding: Encoding): Promise<Buffer> {
    let body = this.compressed.get(encoding);
    if (!body) {
      body =
        encoding === 'br'
          ? promisify(brotliCompress)(this.body, {
              params: {
                // Quality 5: within 15 % of the best, in a fiftieth of the time.
                [constants.BROTLI_PARAM_QUALITY]: 5,
                [constants.BROTLI_PARAM_SIZE_HINT]: this.body.length,
              },
            })
          : promisify(gzip)(this.body);
      this.compressed.set(encoding, body);
    }
    return body;
  }
}

interface Bundle {
  assets: Map<string, Asset>;
  page: (devToken: string | undefined) => Buffer;
}

/** GraphiQL's code as yoga ships it (9 MB of strings): loaded on the first visit only. */
async function loadBundle(): Promise<Bundle> {
  const code = await import('@graphql-yoga/render-graphiql/graphiql');
  const js = 'text/javascript; charset=utf-8';
  const text = (value: string) => Buffer.from(value, 'utf8');
  const favicon = /^data:([^;,]+);base64,(.*)$/s.exec(code.favicon);
  const files = {
    css: new Asset('graphiql', 'css', 'text/css; charset=utf-8', text(code.css)),
    js: new Asset('graphiql', 'js', js, text(code.js)),
    boot: new Asset('boot', 'js', js, BOOT),
    editorWorkerService: new Asset('editor.worker', 'js', js, text(code.editorWorkerService)),
    json: new Asset('json.worker', 'js', js, text(code.jsonWorker)),
    graphql: new Asset('graphql.worker', 'js', js, text(code.graphqlWorker)),
    favicon: favicon
      ? new Asset('favicon', 'ico', favicon[1]!, Buffer.from(favicon[2]!, 'base64'))
      : undefined,
  };
  const assets = new Map<string, Asset>();
  for (const asset of Object.values(files)) if (asset) assets.set(asset.path, asset);
  const workers = {
    editorWorkerService: files.editorWorkerService.path,
    json: files.json.path,
    graphql: files.graphql.path,
  };
  const page = (devToken: string | undefined) => {
    const options = {
      title: 'taskhandle',
      defaultQuery: DEFAULT_QUERY,
      ...(devToken
        ? { headers: JSON.stringify({ Authorization: `Bearer ${devToken}` }, null, 2), devToken }
        : {}),
      workers,
    };
    // `<` escaped: nothing in the options can end the script element early.
    const json = JSON.stringify(options).replace(/</g, '\\u003c');
    return text(`<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8">
    <title>taskhandle · GraphiQL</title>
    ${files.favicon ? `<link rel="icon" href="${files.favicon.path}">` : ''}
    <link rel="stylesheet" href="${files.css.path}">
  </head>
  <body id="body" class="no-focus-outline">
    <noscript>GraphiQL needs JavaScript.</noscript>
    <div id="root"></div>
    <script type="application/json" id="graphiql-options">${json}</script>
    <script src="${files.js.path}"></script>
    <script src="${files.boot.path}"></script>
  </body>
</html>
`);
  };
  return { assets, page };
}

/** The encoding to answer in: br, else gzip, when `accept-encoding` takes it (RFC 9110 §12.5.3). */
export function chooseEncoding(header: string | undefined): Encoding | undefined {
  const accepted = new Map<string, number>();
  for (const part of (header ?? '').split(',')) {
    const [name, ...params] = part.trim().toLowerCase().split(';');
    if (!name) continue;
    const q = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
    accepted.set(name, q ? Number(q.slice(2)) || 0 : 1);
  }
  const takes = (name: Encoding) => (accepted.get(name) ?? accepted.get('*') ?? 0) > 0;
  if (takes('br')) return 'br';
  if (takes('gzip')) return 'gzip';
  return undefined;
}

const matches = (header: string | undefined, etag: string) =>
  header !== undefined &&
  (header.trim() === '*' ||
    header.split(',').some((tag) => tag.trim().replace(/^W\//, '') === etag));

async function sendAsset(req: IncomingMessage, res: ServerResponse, asset: Asset): Promise<void> {
  const headers: Record<string, string> = {
    etag: asset.etag,
    // The URL names the content: it never changes under this name.
    'cache-control': 'public, max-age=31536000, immutable',
    vary: 'accept-encoding',
    'x-content-type-options': 'nosniff',
  };
  if (matches(req.headers['if-none-match'], asset.etag)) {
    res.writeHead(304, headers).end();
    return;
  }
  const encoding =
    asset.body.length > 1024 ? chooseEncoding(req.headers['accept-encoding']) : undefined;
  const body = encoding ? await asset.encoded(encoding) : asset.body;
  headers['content-type'] = asset.type;
  headers['content-length'] = String(body.length);
  if (encoding) headers['content-encoding'] = encoding;
  res.writeHead(200, headers).end(req.method === 'HEAD' ? undefined : body);
}

/**
 * GraphiQL at `GET /graphql` for a browser (an `Accept` with `text/html`, yoga's rule): a
 * small page that is never stored (it may carry the development token), and its code, workers
 * and styles at `/graphql/graphiql/<name>.<hash>.<ext>`, compressed (br, gzip) and cached for
 * good, answering 304 to a revalidation. yoga's own GraphiQL sends all 9 MB inline, every time.
 */
export function createGraphiQLHandler(options: GraphiQLOptions = {}): RouteHandler {
  let bundle: Promise<Bundle> | undefined;
  let page: Buffer | undefined;
  let remotePage: Buffer | undefined;
  return async (req, res) => {
    const path = (req.url ?? '/').split('?')[0]!;
    const isPage = PAGE_PATHS.has(path);
    if (!isPage && !path.startsWith(ASSETS)) return false;
    const browsing = req.method === 'GET' || req.method === 'HEAD';
    if (isPage && !(browsing && req.headers.accept?.includes('text/html'))) return false;
    if (!browsing) {
      sendMethodNotAllowed(res, 'GET, HEAD', 'Use GET.');
      return true;
    }
    bundle ??= loadBundle();
    const loaded = await bundle;
    if (!isPage) {
      const asset = loaded.assets.get(path);
      if (!asset) {
        sendProblem(res, 404, 'NOT_FOUND', 'No such file of GraphiQL.');
        return true;
      }
      await sendAsset(req, res, asset);
      return true;
    }
    // The token is for the person at this machine: another peer's page carries none.
    page ??= loaded.page(options.devToken);
    remotePage ??= loaded.page(undefined);
    const body = loopbackPeer(req) ? page : remotePage;
    res
      .writeHead(200, {
        'content-type': 'text/html; charset=utf-8',
        'content-length': String(body.length),
        'cache-control': 'no-store',
        'x-content-type-options': 'nosniff',
        'referrer-policy': 'no-referrer',
      })
      .end(req.method === 'HEAD' ? undefined : body);
    return true;
  };
}
