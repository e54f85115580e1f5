import type { IncomingMessage, ServerResponse } from 'node:http';
import { type ExecutionResult, getOperationAST } from 'graphql';
import { processRegularResult, type YogaServerInstance } from 'graphql-yoga';
import { readBody } from '../../http/body.js';
import { jsonTypeRefusal, parseJson } from '../../http/json-body.js';
import type { RouteHandler } from '../../http/server.js';
import type { Context } from './builder.js';
import type { ErrorMasking } from './errors.js';
import type { PersistedOperations } from './persisted.js';
import type { ServerContext } from './yoga.js';

type ResultType = 'application/json' | 'application/graphql-response+json';
/** The ranges yoga answers with one JSON document, and the type it then answers with. */
const REGULAR: Record<string, ResultType> = {
  'application/graphql-response+json': 'application/graphql-response+json',
  'application/json': 'application/json',
  'application/*': 'application/json',
  '*/*': 'application/json',
};

/**
 * The response type yoga gives a plain (non-streamed) result for this Accept header, or
 * undefined when yoga would pick another processor (it then answers itself). Yoga takes the
 * first listed range that its regular processor serves — quality values play no part, and a
 * range with a charset other than utf-8 is skipped — so the direct path does the same. That
 * covers what mainstream clients send: Apollo Client 4
 * `application/graphql-response+json,application/json;q=0.9`, graphql-http
 * `application/graphql-response+json, application/json`, GraphiQL the same plus
 * `multipart/mixed`, and none at all.
 */
export function resultTypeFor(accept: string | undefined): ResultType | undefined {
  const ranges = (accept || '*/*').replace(/\s/g, '').toLowerCase().split(',');
  for (const range of ranges) {
    const [type = '', ...params] = range.split(';');
    const charset = params.find((param) => param.includes('charset='));
    if (charset !== undefined && charset !== 'charset=utf-8') continue;
    const regular = REGULAR[type];
    if (regular) return regular;
  }
  return undefined;
}
const PARAM_KEYS = new Set(['query', 'variables', 'operationName', 'extensions']);

type Params = {
  /** Absent when `extensions.persistedQuery` names the document instead. */
  query?: string;
  variables?: Record<string, unknown> | null;
  operationName?: string | null;
  extensions?: Record<string, unknown> | null;
};

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** The body as plain GraphQL-over-HTTP params, or undefined for anything less usual. */
function plainParams(body: string): Params | undefined {
  const json = parseJson(body);
  const parsed = json.ok ? json.value : undefined;
  if (!isObject(parsed)) return undefined;
  if (typeof parsed.query !== 'string' && !(parsed.query === undefined && parsed.extensions))
    return undefined;
  for (const key of Object.keys(parsed)) if (!PARAM_KEYS.has(key)) return undefined;
  if (parsed.variables != null && !isObject(parsed.variables)) return undefined;
  if (parsed.operationName != null && typeof parsed.operationName !== 'string') return undefined;
  if (parsed.extensions != null && !isObject(parsed.extensions)) return undefined;
  return parsed as Params;
}

/** A GET's search params as plain GraphQL-over-HTTP params, or undefined for anything less usual. */
function searchParams(url: string | undefined): Params | undefined {
  const search = new URLSearchParams((url ?? '').split('?')[1] ?? '');
  const query = search.get('query');
  if (!query && !search.has('extensions')) return undefined;
  const params: Params = query ? { query } : {};
  for (const key of new Set(search.keys())) {
    if (!PARAM_KEYS.has(key) || search.getAll(key).length > 1) return undefined;
    if (key === 'query') continue;
    const text = search.get(key)!;
    if (key === 'operationName') params.operationName = text;
    else {
      let value: unknown;
      try {
        value = JSON.parse(text);
      } catch {
        return undefined;
      }
      if (!isObject(value)) return undefined;
      params[key as 'variables' | 'extensions'] = value;
    }
  }
  return params;
}

/**
 * `POST /graphql` with a JSON body, the request every API client sends, and a query over
 * `GET` (urql polls so), executed through yoga's envelop (its parse and validation caches,
 * error masking, our context: the same pipeline the WebSocket face uses) and answered
 * straight on the node response. Yoga's fetch-API adapter costs several times the query
 * itself on a short request (it builds a Request, streams the body through a size limiter,
 * an AbortSignal, a Response); bench/RESULTS.md measures both. Whatever is less plain —
 * another method, content type or Accept, a batch, an unknown or repeated parameter, a
 * document that does not parse or validate, a subscription, a mutation over GET — is handed
 * to yoga unchanged, body and all, so HTTP semantics stay yoga's. A persisted operation
 * (`extensions.persistedQuery`) is resolved first by the rule yoga's plugin runs
 * (persisted.ts); what it refuses goes to yoga too, to be answered. Every body, on either path,
 * is read here under the server's limit (`readBody`), and every limit of §12 is an envelop
 * plugin, so the direct path keeps them all.
 */
export function createGraphQLPostHandler(
  yoga: YogaServerInstance<ServerContext, Context>,
  /** False when a plugin hooks what the direct path skips (direct-hooks.ts `servedDirectly`). */
  direct: boolean,
  /** The masking yoga was built with: a failure here reads as it would there. */
  masking: ErrorMasking,
  /** The persisted operations yoga was built with: their `onParams`, run here. */
  persisted?: PersistedOperations | undefined,
) {
  const fallback = async (
    req: IncomingMessage,
    res: ServerResponse,
    body: string | undefined,
  ): Promise<void> => {
    if (body === undefined) return void (await yoga(req, res));
    const response = await yoga.fetch(
      `http://${req.headers.host ?? 'localhost'}${req.url ?? '/graphql'}`,
      {
        method: req.method ?? 'POST',
        headers: headersOf(req),
        body,
      },
    );
    await send(res, response);
  };

  /**
   * Executes `params` through envelop and answers; `reject` hands the request to yoga (a
   * document that does not parse or validate, an operation this method does not serve).
   */
  const run = async (
    req: IncomingMessage,
    res: ServerResponse,
    params: Params,
    accept: ResultType,
    reject: () => Promise<void>,
  ): Promise<void> => {
    const request = new yoga.fetchAPI.Request(
      `http://${req.headers.host ?? 'localhost'}${req.url ?? '/graphql'}`,
      { method: req.method ?? 'POST', headers: headersOf(req) },
    );
    let resolved: Params = params;
    if (persisted) {
      try {
        resolved = await persisted.resolveRequest(params, request);
      } catch {
        return reject(); // a refusal: yoga answers it, with its status
      }
    }
    const { query } = resolved;
    if (!query) return reject();
    const enveloped = yoga.getEnveloped({ request, params: resolved } as never);
    let document: ReturnType<typeof enveloped.parse>;
    try {
      document = enveloped.parse(query);
      if (enveloped.validate(enveloped.schema, document).length > 0) return reject();
    } catch {
      // Refused by the parser or a limit (the refusal is cached): yoga answers it.
      return reject();
    }
    const operation = getOperationAST(document, resolved.operationName ?? undefined);
    if (!operation || operation.operation === 'subscription') return reject();
    // Over GET, queries only: yoga answers a mutation 405.
    if (req.method === 'GET' && operation.operation !== 'query') return reject();

    let result: ExecutionResult;
    try {
      result = (await enveloped.execute({
        schema: enveloped.schema,
        document,
        contextValue: await enveloped.contextFactory(),
        variableValues: resolved.variables ?? null,
        operationName: resolved.operationName ?? null,
      })) as ExecutionResult;
    } catch (err) {
      yoga.logger.error(err); // logged with its cause, masked for the client
      result = { errors: [masking.unexpected(err)] };
    }
    if (result.errors?.length)
      return send(res, await processRegularResult(result, yoga.fetchAPI, accept));
    const text = JSON.stringify(result);
    res.writeHead(200, {
      'content-type': `${accept}; charset=utf-8`,
      'content-length': Buffer.byteLength(text),
    });
    res.end(text);
  };

  return async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const accept = direct ? resultTypeFor(req.headers.accept) : undefined;
    if (req.method === 'GET') {
      const params = accept && searchParams(req.url);
      if (!accept || !params) return fallback(req, res, undefined);
      return run(req, res, params, accept, () => fallback(req, res, undefined));
    }
    if (req.method === 'HEAD') return fallback(req, res, undefined);
    const body = (await readBody(req)).toString('utf8');
    // Yoga refuses, by the same rule, a type this path does not take.
    const plain = req.method === 'POST' && !jsonTypeRefusal(req.headers['content-type']);
    const params = plain && accept ? plainParams(body) : undefined;
    if (!accept || !params) return fallback(req, res, body);
    return run(req, res, params, accept, () => fallback(req, res, body));
  };
}

function headersOf(req: IncomingMessage): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return headers;
}

/** Writes a fetch Response on the node response, streaming its body (a subscription's events, say). */
async function send(res: ServerResponse, response: Response): Promise<void> {
  const headers: Record<string, string> = {};
  response.headers.forEach((value, name) => {
    headers[name] = value;
  });
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

/** `/graphql` as one of the server's routes: the direct POST path where it may, else yoga. */
export function graphqlRoute(
  yoga: YogaServerInstance<ServerContext, Context>,
  direct: boolean,
  masking: ErrorMasking,
  persisted?: PersistedOperations | undefined,
): RouteHandler {
  const serve = createGraphQLPostHandler(yoga, direct, masking, persisted);
  return async (req, res) => {
    if ((req.url ?? '/').split('?')[0] !== '/graphql') return false;
    await serve(req, res);
    return true;
  };
}
