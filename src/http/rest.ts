import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { authenticate } from '../auth/authenticate.js';
import { SCOPES, toActor, type Principal } from '../auth/principal.js';
import type { TokenVerifier } from '../auth/tokens.js';
import { ServiceError, coerceError, notFound, type ErrorCode } from '../tasks/errors.js';
import { encodeCursor, isTaskId, type TaskService } from '../tasks/service.js';
import { TASK_STATUSES, isTerminal, type TaskStatus } from '../tasks/status.js';
import type { Task } from '../tasks/task.js';

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
  IDEMPOTENCY_KEY_REUSED: 422,
  BAD_USER_INPUT: 422,
};
const TITLE_OF: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  409: 'Conflict',
  413: 'Content Too Large',
  415: 'Unsupported Media Type',
  422: 'Unprocessable Content',
  500: 'Internal Server Error',
};
const MAX_BODY_BYTES = 1024 * 1024;

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

/** The MCP-style handle; `full` adds the payloads a status monitor shows to whoever may see them. */
export function toHandle(task: Task, viewer: Principal | null, full: boolean): Record<string, unknown> {
  const handle: Record<string, unknown> = {
    resultType: 'task',
    taskId: task.id,
    status: task.status,
    createdAt: task.createdAt.toISOString(),
    lastUpdatedAt: task.lastUpdatedAt.toISOString(),
    ttlMs: task.ttlMs,
    pollIntervalMs: task.pollIntervalMs,
  };
  if (!full) return handle;
  const owner = viewer?.sub === task.owner;
  if (task.statusMessage !== null) handle.statusMessage = task.statusMessage;
  if (owner && task.status === 'completed') handle.result = task.result ?? null;
  if (task.error) handle.error = task.error;
  if (owner && task.inputRequest) handle.inputRequest = task.inputRequest;
  return handle;
}

function retryAfter(task: Task): Record<string, string> {
  return isTerminal(task.status) ? {} : { 'retry-after': String(Math.max(1, Math.ceil(task.pollIntervalMs / 1000))) };
}

/** RFC 6750 §3: the Bearer challenge, with an error code once a token was sent and refused. */
function challenge(err: ServiceError, status: number): Record<string, string> {
  if (status === 403 && typeof err.details?.scope === 'string') {
    return { 'www-authenticate': `Bearer error="insufficient_scope", scope="${err.details.scope}"` };
  }
  if (status !== 401) return {};
  // No credentials at all: a bare challenge. A refused token: say so, without the reason.
  return { 'www-authenticate': err.details?.tokenSent ? 'Bearer error="invalid_token"' : 'Bearer' };
}

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}, type = 'application/json'): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': type, 'content-length': String(Buffer.byteLength(text)), 'cache-control': 'no-store', ...headers });
  res.end(text);
}

function sendProblem(res: ServerResponse, status: number, code: string, detail: string, headers: Record<string, string> = {}): void {
  sendJson(res, status, { type: 'about:blank', title: TITLE_OF[status] ?? 'Error', status, code, detail }, headers, 'application/problem+json');
}

async function readJson(req: IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) throw new HttpProblem(413, 'BAD_USER_INPUT', `The body is larger than ${MAX_BODY_BYTES} bytes.`);
    chunks.push(chunk);
  }
  const text = Buffer.concat(chunks).toString('utf8');
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
  if (typeof value !== 'number' || !Number.isInteger(value)) throw new ServiceError('BAD_USER_INPUT', `${name} must be an integer.`);
  return value;
}

function parseStatuses(raw: string | null): TaskStatus[] | null {
  if (!raw) return null;
  const statuses = raw.split(',').map((s) => s.trim().toLowerCase());
  for (const status of statuses) {
    if (!TASK_STATUSES.includes(status as TaskStatus)) throw new ServiceError('BAD_USER_INPUT', `Unknown status ${JSON.stringify(status)}.`);
  }
  return statuses as TaskStatus[];
}

export function createRestHandler(options: RestOptions) {
  const { tasks, verifier, log } = options;

  /** The caller, if it may do `operation`; a refusal is audited like any task operation. */
  async function principalFor(req: IncomingMessage, scope: string, operation: string, taskId: string | null = null): Promise<Principal> {
    const auth = await authenticate(verifier, req.headers.authorization);
    const refuse = (err: ServiceError) => {
      tasks.refused(auth.principal?.sub ?? null, operation, taskId, err.code === 'FORBIDDEN' ? 'FORBIDDEN' : 'UNAUTHENTICATED');
      return err;
    };
    if (auth.error) throw refuse(new ServiceError(auth.error.code, auth.error.message, { tokenSent: true }));
    if (!auth.principal) throw refuse(new ServiceError('UNAUTHENTICATED', 'Authentication required: send "Authorization: Bearer <token>".'));
    if (!auth.principal.scopes.has(scope)) throw refuse(new ServiceError('FORBIDDEN', `The token lacks the ${scope} scope.`, { scope }));
    return auth.principal;
  }

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
      if (typeof body.kind !== 'string') throw new ServiceError('BAD_USER_INPUT', 'kind must be a string.');
      const key = req.headers['idempotency-key'];
      const { task } = await tasks.start(toActor(principal), {
        kind: body.kind,
        input: body.input,
        ttlMs: optionalInt(body.ttlMs, 'ttlMs'),
        idempotencyKey: typeof key === 'string' ? key : null,
      });
      return sendJson(res, 202, toHandle(task, principal, false), { location: `/v1/jobs/${task.id}`, ...retryAfter(task) });
    }
    if (parts.length === 2 && method === 'GET') {
      const principal = await principalFor(req, SCOPES.read, 'tasks');
      const limit = url.searchParams.get('limit');
      const page = await tasks.list(toActor(principal), {
        first: limit === null ? null : Number(limit),
        after: url.searchParams.get('cursor'),
        statuses: parseStatuses(url.searchParams.get('status')),
      });
      const last = page.tasks.at(-1);
      const nextCursor = page.hasNextPage && last ? encodeCursor(last) : null;
      const headers: Record<string, string> = {};
      if (nextCursor) {
        const next = new URL(url);
        next.searchParams.set('cursor', nextCursor);
        headers.link = `<${next.pathname}${next.search}>; rel="next"`;
      }
      return sendJson(res, 200, { tasks: page.tasks.map((t) => toHandle(t, principal, true)), nextCursor }, headers);
    }
    if (parts.length === 3 && id && method === 'GET') {
      const principal = await principalFor(req, SCOPES.read, 'task', id);
      const task = await tasks.get(toActor(principal), taskIdOf(id));
      if (!task) throw notFound();
      return sendJson(res, 200, toHandle(task, principal, true), retryAfter(task));
    }
    if (parts.length === 3 && id && method === 'DELETE') {
      const principal = await principalFor(req, SCOPES.write, 'cancelTask', id);
      const task = await tasks.cancel(toActor(principal), taskIdOf(id));
      return sendJson(res, 200, toHandle(task, principal, true));
    }
    if (parts.length === 4 && id && sub === 'input' && method === 'POST') {
      const principal = await principalFor(req, SCOPES.write, 'provideTaskInput', id);
      const taskId = taskIdOf(id);
      const body = await readJson(req);
      if (typeof body.key !== 'string') throw new ServiceError('BAD_USER_INPUT', 'key must be a string.');
      if (!('value' in body)) throw new ServiceError('BAD_USER_INPUT', 'value is required.');
      const task = await tasks.provideInput(toActor(principal), taskId, body.key, body.value);
      return sendJson(res, 200, toHandle(task, principal, true), retryAfter(task));
    }
    const allowed = parts.length === 2 ? 'GET, POST' : parts.length === 3 ? 'GET, DELETE' : parts.length === 4 && sub === 'input' ? 'POST' : undefined;
    if (allowed) return sendProblem(res, 405, 'METHOD_NOT_ALLOWED', `Use ${allowed}.`, { allow: allowed });
    return sendProblem(res, 404, 'NOT_FOUND', 'No such route.');
  }

  /** Handles `/v1/jobs…`; resolves false for any other path. */
  return async function rest(req: IncomingMessage, res: ServerResponse): Promise<boolean> {
    const url = new URL(req.url ?? '/', 'http://localhost');
    if (url.pathname !== '/v1/jobs' && !url.pathname.startsWith('/v1/jobs/')) return false;
    try {
      await route(req, res, url);
    } catch (err) {
      if (err instanceof ServiceError) {
        const status = err instanceof HttpProblem ? err.status : STATUS_OF[err.code];
        sendProblem(res, status, err.code, err.message, challenge(err, status));
      } else {
        log.error({ err: coerceError(err), method: req.method, path: url.pathname }, 'unexpected error in the REST face');
        if (!res.headersSent) sendProblem(res, 500, 'INTERNAL_SERVER_ERROR', 'Unexpected error.');
      }
    }
    return true;
  };
}
