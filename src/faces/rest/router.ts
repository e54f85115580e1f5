import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { toActor } from '../../auth/principal.js';
import type { TokenVerifier } from '../../auth/tokens.js';
import { readJson } from '../../http/json-body.js';
import { answerThrown } from '../../http/last-catch.js';
import { sendJson, sendProblem } from '../../http/problem.js';
import { HttpRefusal, requireBearer, sendMethodNotAllowed } from '../../http/refusal.js';
import type { Operation } from '../../tasks/scopes.js';
import { checkBody, compileBodies } from './body-check.js';
import type { RequestBody, RestRoute, RestServices } from './route.js';
import { REST_ROUTES } from './table.js';

/**
 * The plain-HTTP face (DESIGN §6, §15–17): every path under `/v1`, served from the route table
 * (table.ts) over the same TaskService as GraphQL. For each request: the route, the bearer
 * token and its scope, the path parameters, the body against the route's schema, then the
 * handler. Errors are RFC 9457 problem documents.
 */
export interface RestOptions extends RestServices {
  verifier: TokenVerifier;
  log: Logger;
}

/** The order `Allow` lists methods in. */
const METHODS = ['GET', 'PUT', 'POST', 'DELETE'] as const;

interface Compiled {
  route: RestRoute;
  pattern: RegExp;
  names: string[];
}

function compile(route: RestRoute): Compiled {
  const names: string[] = [];
  const source = route.path.replace(/\{(\w+)\}|[.]/g, (match, name: string | undefined) => {
    if (!name) return `\\${match}`;
    names.push(name);
    return '([^/]+)';
  });
  return { route, pattern: new RegExp(`^${source}$`), names };
}

/** The body as JSON; one that does not parse is 400, not 422: it is not JSON at all. */
async function bodyOf(req: IncomingMessage, body: RequestBody): Promise<unknown> {
  const read = await readJson(req, 'empty' in body ? { empty: body.empty } : {});
  if (!read.ok) throw new HttpRefusal(400, 'BAD_USER_INPUT', 'The body is not valid JSON.');
  return checkBody(body, read.value);
}

export function createRestHandler(options: RestOptions) {
  const { tasks, schedules, verifier, log } = options;
  const routes = REST_ROUTES.map(compile);
  compileBodies(REST_ROUTES.flatMap((route) => (route.body ? [route.body] : [])));

  /** The caller, if it may do `operation`; a refusal is audited like any task operation. */
  async function actorFor(req: IncomingMessage, operation: Operation, taskId: string | null) {
    const principal = await requireBearer(verifier, req, { audit: tasks.gate, operation, taskId });
    const actor = toActor(principal);
    tasks.gate.authorize(actor, operation, taskId);
    return actor;
  }

  async function serve(req: IncomingMessage, res: ServerResponse, url: URL, hit: Compiled) {
    const { route } = hit;
    const segments = hit.pattern.exec(url.pathname)!.slice(1);
    const raw = Object.fromEntries(hit.names.map((name, i) => [name, segments[i]!]));
    const actor =
      route.operation === null ? null : await actorFor(req, route.operation, raw.taskId ?? null);
    const params: Record<string, string> = {};
    for (const name of hit.names) params[name] = route.params![name]!.read(raw[name]!);
    const call = {
      services: { tasks, schedules },
      params,
      query: url.searchParams,
      headers: req.headers,
      body: route.body ? await bodyOf(req, route.body) : undefined,
      url,
    };
    const reply =
      route.operation === null
        ? await route.serve({ ...call, actor: null })
        : await route.serve({ ...call, actor: actor! });
    if (reply.body === undefined) {
      res.writeHead(reply.status, { 'cache-control': 'no-store', ...reply.headers }).end();
      return;
    }
    sendJson(res, reply.status, reply.body, reply.headers);
  }

  /** Serves every path under `/v1`; resolves false for any other. */
  return async function rest(req: IncomingMessage, res: ServerResponse): Promise<boolean> {
    // A request target need not be a path ('//', '*', an absolute URL): such is no route of ours.
    const target = req.url?.startsWith('/') ? req.url : '/';
    const url = new URL(`http://localhost${target}`);
    if (url.pathname !== '/v1' && !url.pathname.startsWith('/v1/')) return false;
    // Past the root, empty segments are no segments: `/v1/jobs/` is `/v1/jobs`.
    url.pathname = `/${url.pathname.split('/').filter(Boolean).join('/')}`;
    const matches = routes.filter((r) => r.pattern.test(url.pathname));
    const hit = matches.find((r) => r.route.method === req.method);
    try {
      if (hit) await serve(req, res, url, hit);
      else if (matches.length) {
        const allow = METHODS.filter((m) => matches.some((r) => r.route.method === m)).join(', ');
        sendMethodNotAllowed(res, allow, `Use ${allow}.`);
      } else sendProblem(res, 404, 'NOT_FOUND', 'No such route.');
    } catch (err) {
      const logAs = hit?.route.logAs;
      answerThrown(req, res, err, {
        log,
        where: logAs?.where ?? 'the REST face',
        ...(logAs ? { context: { path: logAs.path } } : {}),
      });
    }
    return true;
  };
}
