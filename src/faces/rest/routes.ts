import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { toActor } from '../../auth/principal.js';
import type { TokenVerifier } from '../../auth/tokens.js';
import { notFound, ServiceError } from '../../errors.js';
import { readJson } from '../../http/json-body.js';
import { answerThrown } from '../../http/last-catch.js';
import { sendJson, sendProblem } from '../../http/problem.js';
import { HttpRefusal, requireBearer, sendMethodNotAllowed } from '../../http/refusal.js';
import type { ScheduleService } from '../../schedules/service.js';
import { handleOf, reportOf, retryAfterSeconds } from '../../tasks/handle.js';
import type { Operation } from '../../tasks/scopes.js';
import type { Actor, StartRequest, TaskService } from '../../tasks/service.js';
import type { Task } from '../../tasks/task.js';
import { isTaskId } from '../../tasks/validation.js';
import { filterOfQuery } from './filter.js';
import { manyRoutes } from './many.js';
import { pageHeaders } from './paging.js';
import { scheduleRoutes } from './schedules.js';
import { stepRoutes, withSteps } from './steps.js';
import { debounceOf, managedWorkOf } from './work-body.js';

/**
 * The plain-HTTP face (DESIGN §6): `202 Accepted` and a status monitor at `/v1/jobs/{id}`,
 * over the same TaskService as GraphQL. Errors are RFC 9457 problem documents.
 */
export interface RestOptions {
  tasks: TaskService;
  /** `/v1/schedules` (DESIGN §17). */
  schedules: ScheduleService;
  verifier: TokenVerifier;
  log: Logger;
}

function retryAfter(task: Task): Record<string, string> {
  const seconds = retryAfterSeconds(task);
  return seconds === undefined ? {} : { 'retry-after': String(seconds) };
}

/** The body as a JSON object; a POST without one reads as `{}`. */
async function objectBody(req: IncomingMessage): Promise<Record<string, unknown>> {
  const body = await readJson(req, { empty: {} });
  if (!body.ok) throw new HttpRefusal(400, 'BAD_USER_INPUT', 'The body is not valid JSON.');
  const { value } = body;
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new ServiceError('BAD_USER_INPUT', 'The body must be a JSON object.');
  }
  return value as Record<string, unknown>;
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
    ...managedWorkOf(body),
    labels: body.labels,
    debounce: debounceOf(body),
  };
}

export function createRestHandler(options: RestOptions) {
  const { tasks, schedules, verifier, log } = options;

  /** The caller, if it may do `operation`; a refusal is audited like any task operation. */
  async function actorFor(
    req: IncomingMessage,
    operation: Operation,
    taskId: string | null = null,
  ): Promise<Actor> {
    const principal = await requireBearer(verifier, req, { audit: tasks.gate, operation, taskId });
    const actor = toActor(principal);
    tasks.gate.authorize(actor, operation, taskId);
    return actor;
  }

  const routeMany = manyRoutes({ tasks, actorFor, objectBody, retryAfter, startRequestOf });
  const routeSchedules = scheduleRoutes({ schedules, actorFor, objectBody, retryAfter });
  const routeSteps = stepRoutes({ tasks, actorFor, retryAfter, taskIdOf });

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
      const actor = await actorFor(req, 'startTask');
      const body = await objectBody(req);
      const key = req.headers['idempotency-key'];
      const { task } = await tasks.start(
        actor,
        startRequestOf(body, typeof key === 'string' ? key : null),
      );
      return sendJson(res, 202, handleOf(task), {
        location: `/v1/jobs/${task.id}`,
        ...retryAfter(task),
      });
    }
    if (parts.length === 2 && method === 'GET') {
      const actor = await actorFor(req, 'tasks');
      const limit = url.searchParams.get('limit');
      const page = await tasks.list(actor, {
        first: limit === null ? null : Number(limit),
        after: url.searchParams.get('cursor'),
        filter: filterOfQuery(url.searchParams),
      });
      const nextCursor = page.hasNextPage ? page.endCursor : null;
      return sendJson(
        res,
        200,
        { tasks: page.tasks.map((t) => reportOf(t, actor)), nextCursor },
        pageHeaders(url, nextCursor),
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
    if (await routeSteps(req, res, parts)) return;
    if (parts.length === 3 && id && method === 'GET') {
      const actor = await actorFor(req, 'task', id);
      const task = await tasks.get(actor, taskIdOf(id));
      if (!task) throw notFound();
      const report = await withSteps(tasks, actor, task, reportOf(task, actor));
      return sendJson(res, 200, report, retryAfter(task));
    }
    if (parts.length === 3 && id && method === 'DELETE') {
      const actor = await actorFor(req, 'cancelTask', id);
      const task = await tasks.cancel(actor, taskIdOf(id));
      return sendJson(res, 200, reportOf(task, actor));
    }
    if (parts.length === 4 && id && sub === 'input' && method === 'POST') {
      const actor = await actorFor(req, 'provideTaskInput', id);
      const taskId = taskIdOf(id);
      const body = await objectBody(req);
      if (typeof body.key !== 'string')
        throw new ServiceError('BAD_USER_INPUT', 'key must be a string.');
      if (!('value' in body)) throw new ServiceError('BAD_USER_INPUT', 'value is required.');
      const task = await tasks.provideInput(actor, taskId, body.key, body.value);
      return sendJson(res, 200, reportOf(task, actor), retryAfter(task));
    }
    const allowed =
      parts.length === 2
        ? 'GET, POST'
        : parts.length === 3
          ? 'GET, DELETE'
          : parts.length === 4 && (sub === 'input' || sub === 'retry')
            ? 'POST'
            : undefined;
    if (allowed) return sendMethodNotAllowed(res, allowed, `Use ${allowed}.`);
    return sendProblem(res, 404, 'NOT_FOUND', 'No such route.');
  }

  /** Handles `/v1/jobs…` and `/v1/schedules…`; resolves false for any other path. */
  return async function rest(req: IncomingMessage, res: ServerResponse): Promise<boolean> {
    // A request target need not be a path ('//', '*', an absolute URL): such is no route of ours.
    const target = req.url?.startsWith('/') ? req.url : '/';
    const url = new URL(`http://localhost${target}`);
    const under = (root: string) => url.pathname === root || url.pathname.startsWith(`${root}/`);
    const routeTo = under('/v1/jobs') ? route : under('/v1/schedules') ? routeSchedules : null;
    if (!routeTo) return false;
    try {
      await routeTo(req, res, url);
    } catch (err) {
      answerThrown(req, res, err, { log, where: 'the REST face' });
    }
    return true;
  };
}
