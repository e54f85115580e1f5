import type { IncomingMessage, ServerResponse } from 'node:http';
import { getOperationAST, GraphQLError, type ExecutionResult } from 'graphql';
import { processRegularResult, type YogaServerInstance } from 'graphql-yoga';
import type { Context } from '../graphql/builder.js';
import type { ServerContext } from './yoga.js';

/** Bodies declared up to this size take the direct path; larger or unsized ones go to yoga, which applies its own limit. */
const MAX_DIRECT_BODY_BYTES = 1024 * 1024;
const JSON_TYPE = /^application\/json\s*(;\s*charset=utf-8\s*)?$/i;
const ACCEPTED: Record<string, 'application/json' | 'application/graphql-response+json'> = {
  '': 'application/json',
  '*/*': 'application/json',
  'application/json': 'application/json',
  'application/graphql-response+json': 'application/graphql-response+json',
};
const PARAM_KEYS = new Set(['query', 'variables', 'operationName', 'extensions']);

type Params = { query: string; variables?: Record<string, unknown> | null; operationName?: string | null; extensions?: Record<string, unknown> | null };

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** The body as plain GraphQL-over-HTTP params, or undefined for anything less usual. */
function plainParams(body: string): Params | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return undefined;
  }
  if (!isObject(parsed) || typeof parsed.query !== 'string') return undefined;
  for (const key of Object.keys(parsed)) if (!PARAM_KEYS.has(key)) return undefined;
  if (parsed.variables != null && !isObject(parsed.variables)) return undefined;
  if (parsed.operationName != null && typeof parsed.operationName !== 'string') return undefined;
  if (parsed.extensions != null && !isObject(parsed.extensions)) return undefined;
  return parsed as Params;
}

/**
 * `POST /graphql` with a JSON body, the request every API client sends, executed through
 * yoga's envelop (its parse and validation caches, error masking, our context: the same
 * pipeline the WebSocket face uses) and answered straight on the node response. Yoga's
 * fetch-API adapter costs several times the query itself on a short request (it builds a
 * Request, streams the body through a size limiter, an AbortSignal, a Response);
 * bench/RESULTS.md measures both. Whatever is less plain — another method, content type or
 * Accept, a browser's request (CORS), a batch, an unknown parameter, a document that does not
 * parse or validate, a subscription — is handed to yoga unchanged, body and all, so HTTP
 * semantics stay yoga's.
 */
export function createGraphQLPostHandler(yoga: YogaServerInstance<ServerContext, Context>) {
  const fallback = async (req: IncomingMessage, res: ServerResponse, body: string | undefined): Promise<void> => {
    if (body === undefined) return void (await yoga(req, res));
    const response = await yoga.fetch(`http://${req.headers.host ?? 'localhost'}${req.url ?? '/graphql'}`, {
      method: req.method ?? 'POST',
      headers: headersOf(req),
      body,
    });
    await send(res, response);
  };

  return async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const accept = ACCEPTED[(req.headers.accept ?? '').replace(/\s*;\s*charset=utf-8/i, '').trim().toLowerCase()];
    const length = Number(req.headers['content-length']);
    // A browser's request (it sends Origin) goes to yoga, which answers with CORS headers.
    const plain = req.method === 'POST' && req.headers.origin === undefined && JSON_TYPE.test(req.headers['content-type'] ?? '');
    if (!plain || !accept || !(length <= MAX_DIRECT_BODY_BYTES)) {
      return fallback(req, res, undefined);
    }
    const body = await readBody(req);
    const params = body === undefined ? undefined : plainParams(body);
    if (!params) return fallback(req, res, body);

    const request = new yoga.fetchAPI.Request(`http://${req.headers.host ?? 'localhost'}${req.url ?? '/graphql'}`, { method: 'POST', headers: headersOf(req) });
    const enveloped = yoga.getEnveloped({ request, params } as never);
    let document;
    try {
      document = enveloped.parse(params.query);
    } catch {
      return fallback(req, res, body);
    }
    if (enveloped.validate(enveloped.schema, document).length > 0) return fallback(req, res, body);
    const operation = getOperationAST(document, params.operationName ?? undefined);
    if (!operation || operation.operation === 'subscription') return fallback(req, res, body);

    let result: ExecutionResult;
    try {
      result = (await enveloped.execute({
        schema: enveloped.schema,
        document,
        contextValue: await enveloped.contextFactory(),
        variableValues: params.variables ?? null,
        operationName: params.operationName ?? null,
      })) as ExecutionResult;
    } catch (err) {
      yoga.logger.error(err); // logged with its cause, masked for the client
      result = { errors: [new GraphQLError('Unexpected error.', { extensions: { code: 'INTERNAL_SERVER_ERROR' } })] };
    }
    if (result.errors?.length) return send(res, await processRegularResult(result, yoga.fetchAPI, accept));
    const text = JSON.stringify(result);
    res.writeHead(200, { 'content-type': `${accept}; charset=utf-8`, 'content-length': Buffer.byteLength(text) });
    res.end(text);
  };
}

function headersOf(req: IncomingMessage): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return headers;
}

function readBody(req: IncomingMessage): Promise<string | undefined> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', () => resolve(undefined));
  });
}

/** Writes a fetch Response on the node response, streaming its body (a subscription's events, say). */
async function send(res: ServerResponse, response: Response): Promise<void> {
  const headers: Record<string, string> = {};
  response.headers.forEach((value, name) => (headers[name] = value));
  res.writeHead(response.status, headers);
  if (!response.body) return void res.end();
  const reader = response.body.getReader();
  res.once('close', () => void reader.cancel().catch(() => {}));
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      res.write(value);
    }
  } finally {
    res.end();
  }
}
