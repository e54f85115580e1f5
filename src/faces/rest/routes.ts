import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { type Principal, SCOPES, toActor } from '../../auth/principal.js';
import type { TokenVerifier } from '../../auth/tokens.js';
import { coerceError, type ErrorCode, notFound, ServiceError } from '../../errors.js';
import { hasBody, PayloadTooLarge, readBody } from '../../http/body.js';
import { BearerRefusal, bearerChallenge, requireBearer } from '../../http/challenge.js';
import { sendJson, sendProblem } from '../../http/problem.js';
import { handleOf, reportOf, retryAfterSeconds } from '../../tasks/handle.js';
import type { StartRequest, TaskService } from '../../tasks/service.js';
import type { Task } from '../../tasks/task.js';
import { isTaskId } from '../../tasks/validation.js';
import { filterOfQuery } from './filter.js';
import { manyRoutes } from './many.js';

/**
 * The plain-HTTP face (DESIGN §6): `202 Accepted` and a status monitor at `/v1/jobs/{id}`,
 * over the same TaskService as GraphQL. Errors are RFC 9457 problem documents.
 */
export interface RestOptions {
  tasks: TaskService;
  verifier: TokenVerifier;
  log: Logger;
}

const STATUS_OF: Record<ErrorCode, number> = {
  UNAUTHENTICATED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  TASK_TERMINAL: 409,
  NOT_AWAITING_INPUT: 409,
  TASK_NOT_RETRYABLE: 409,
  IDEMPOTENCY_KEY_REUSED: 422,
  BAD_USER_INPUT: 422,
  RATE_LIMITED: 429,
  SERVICE_UNAVAILABLE: 503,
  TOO_MANY_SUBSCRIPTIONS: 429,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
};

/** A request the face refuses before reaching the domain (HTTP status other than the code's usual one). */
class HttpProblem extends ServiceError {
  constructor(
    readonly status: number,
    code: ErrorCode,
    message: string,
  ) {
    super(code, message);
  }
}

function retryAfter(task: Task): Record<string, string> {
  const seconds = retryAfterSeconds(task);
  return seconds === undefined ? {} : { 'retry-after': String(seconds) };
}

/**
 * `Retry-After` for a refusal that passes: the error's own `retryAfterMs` (whole seconds,
 * at least 1), else 1 s for SERVICE_UNAVAILABLE.
 */
function retryAfterOfError(err: ServiceError): Record<string, string> {
  const ms = err.details?.retryAfterMs;
  if (typeof ms === 'number' && ms > 0) return { 'retry-after': String(Math.ceil(ms / 1000)) };
  return err.code === 'SERVICE_UNAVAILABLE' ? { 'retry-after': '1' } : {};
}

/** `application/json`, or a `+json` type, with or without parameters. */
const JSON_TYPE = /^application\/(?:[\w.-]+\+)?json\s*(?:;|$)/i;

/**
 * The body as a JSON object. Only JSON bodies are taken: a form or text/plain body is what a
 * page on another site can send without asking (415).
 */
async function readJson(req: IncomingMessage): Promise<Record<string, unknown>> {
  if (hasBody(req) && !JSON_TYPE.test(req.headers['content-type'] ?? ''))
    throw new ServiceError('UNSUPPORTED_MEDIA_TYPE', 'The body must be application/json.');
  const text = (await readBody(req)).toString('utf8');
  let body: unknown;
  try {
    body = text.trim() === '' ? {} : JSON.parse(text);
  } catch {
    throw new HttpProblem(400, 'BAD_USER_INPUT', 'The body is not valid JSON.');
  }
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new ServiceError('BAD_USER_INPUT', 'The body must be a JSON object.');
  }
  return body as Record<string, unknown>;
}

function optionalInt(value: unknown, name: string): number | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'number' || !Number.isInteger(value))
    throw new ServiceError('BAD_USER_INPUT', `${name} must be an integer.`);
  return value;
}

/** The body's `webhook` (DESIGN §11): url and secret only; the domain checks them. */
function webhookOf(value: unknown): { url: string; secret?: string | null } | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'object' || Array.isArray(value))
    throw new ServiceError('BAD_USER_INPUT', 'webhook must be an object with a url.');
  const { url, secret } = value as Record<string, unknown>;
  if (secret !== undefined && secret !== null && typeof secret !== 'string')
    throw new ServiceError('BAD_USER_INPUT', 'webhook.secret must be a string.');
  return { url: url as string, secret: (secret as string | null | undefined) ?? null };
}

/** A start request from a body (`POST /v1/jobs`, or one entry of `POST /v1/jobs/batch`). */
function startRequestOf(
  body: Record<string, unknown>,
  idempotencyKey: string | null,
): StartRequest {
  if (typeof body.kind !== 'string')
    throw new ServiceError('BAD_USER_INPUT', 'kind must be a string.');
  return {
    kind: body.kind,
    input: body.input,
    ttlMs: optionalInt(body.ttlMs, 'ttlMs'),
    idempotencyKey,
    webhook: webhookOf(body.webhook),
    labels: body.labels,
  };
}

export function createRestHandler(options: RestOptions) {
  const { tasks, verifier, log } = options;

  /** The caller, if it may do `operation`; a refusal is audited like any task operation. */
  async function principalFor(
    req: IncomingMessage,
    scope: string,
    operation: string,
    taskId: string | null = null,
  ): Promise<Principal> {
    try {
      return await requireBearer(verifier, req, scope);
    } catch (err) {
      if (err instanceof BearerRefusal) {
        const outcome = err.code === 'FORBIDDEN' ? 'FORBIDDEN' : 'UNAUTHENTICATED';
        tasks.refused(err.subject, operation, taskId, outcome);
      }
      throw err;
    }
  }

  const routeMany = manyRoutes({ tasks, principalFor, readJson, retryAfter, startRequestOf });

  /** A path segment that cannot be a taskId names no task: 404, like any unknown id (not 422). */
  function taskIdOf(id: string): string {
    if (!isTaskId(id)) throw notFound();
    return id;
  }

  async function route(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    const parts = url.pathname.split('/').filter(Boolean); // ['v1', 'jobs', id?, 'input'?]
    const [, , id, sub] = parts;
    const method = req.method ?? 'GET';

    if (parts.length === 2 && method === 'POST') {
      const principal = await principalFor(req, SCOPES.write, 'startTask');
      const body = await readJson(req);
      const key = req.headers['idempotency-key'];
      const { task } = await tasks.start(
        toActor(principal),
        startRequestOf(body, typeof key === 'string' ? key : null),
      );
      return sendJson(res, 202, handleOf(task), {
        location: `/v1/jobs/${task.id}`,
        ...retryAfter(task),
      });
    }
    if (parts.length === 2 && method === 'GET') {
      const principal = await principalFor(req, SCOPES.read, 'tasks');
      const limit = url.searchParams.get('limit');
      const page = await tasks.list(toActor(principal), {
        first: limit === null ? null : Number(limit),
        after: url.searchParams.get('cursor'),
        filter: filterOfQuery(url.searchParams),
      });
      const nextCursor = page.hasNextPage ? page.endCursor : null;
      const headers: Record<string, string> = {};
      if (nextCursor) {
        const next = new URL(url);
        next.searchParams.set('cursor', nextCursor);
        headers.link = `<${next.pathname}${next.search}>; rel="next"`;
      }
      return sendJson(
        res,
        200,
        { tasks: page.tasks.map((t) => reportOf(t, toActor(principal))), nextCursor },
        headers,
      );
    }
    if (parts.length === 3 && id && method === 'POST') {
      const handled = await routeMany(req, res, id, null);
      if (handled) return;
    }
    if (parts.length === 4 && id && sub === 'retry' && method === 'POST') {
      await routeMany(req, res, 'retry', taskIdOf(id));
      return;
    }
    if (parts.length === 3 && id && method === 'GET') {
      const principal = await principalFor(req, SCOPES.read, 'task', id);
      const task = await tasks.get(toActor(principal), taskIdOf(id));
      if (!task) throw notFound();
      return sendJson(res, 200, reportOf(task, toActor(principal)), retryAfter(task));
    }
    if (parts.length === 3 && id && method === 'DELETE') {
      const principal = await principalFor(req, SCOPES.write, 'cancelTask', id);
      const task = await tasks.cancel(toActor(principal), taskIdOf(id));
      return sendJson(res, 200, reportOf(task, toActor(principal)));
    }
    if (parts.length === 4 && id && sub === 'input' && method === 'POST') {
      const principal = await principalFor(req, SCOPES.write, 'provideTaskInput', id);
      const taskId = taskIdOf(id);
      const body = await readJson(req);
      if (typeof body.key !== 'string')
        throw new ServiceError('BAD_USER_INPUT', 'key must be a string.');
      if (!('value' in body)) throw new ServiceError('BAD_USER_INPUT', 'value is required.');
      const task = await tasks.provideInput(toActor(principal), taskId, body.key, body.value);
      return sendJson(res, 200, reportOf(task, toActor(principal)), retryAfter(task));
    }
    const allowed =
      parts.length === 2
        ? 'GET, POST'
        : parts.length === 3
          ? 'GET, DELETE'
          : parts.length === 4 && (sub === 'input' || sub === 'retry')
            ? 'POST'
            : undefined;
    if (allowed)
      return sendProblem(res, 405, 'METHOD_NOT_ALLOWED', `Use ${allowed}.`, { allow: allowed });
    return sendProblem(res, 404, 'NOT_FOUND', 'No such route.');
  }

  /** Handles `/v1/jobs…`; resolves false for any other path. */
  return async function rest(req: IncomingMessage, res: ServerResponse): Promise<boolean> {
    // A request target need not be a path ('//', '*', an absolute URL): such is no route of ours.
    const target = req.url?.startsWith('/') ? req.url : '/';
    const url = new URL(`http://localhost${target}`);
    if (url.pathname !== '/v1/jobs' && !url.pathname.startsWith('/v1/jobs/')) return false;
    try {
      await route(req, res, url);
    } catch (err) {
      if (err instanceof PayloadTooLarge) throw err; // the server's 413, closing the connection
      if (err instanceof ServiceError) {
        const status = err instanceof HttpProblem ? err.status : STATUS_OF[err.code];
        sendProblem(res, status, err.code, err.message, {
          ...bearerChallenge(err),
          ...retryAfterOfError(err),
        });
      } else {
        log.error(
          { err: coerceError(err), method: req.method, path: url.pathname },
          'unexpected error in the REST face',
        );
        if (!res.headersSent) sendProblem(res, 500, 'INTERNAL_SERVER_ERROR', 'Unexpected error.');
      }
    }
    return true;
  };
}
