import type { IncomingMessage, ServerResponse } from 'node:http';
import { notFound, ServiceError } from '../../errors.js';
import { sendJson, sendProblem } from '../../http/problem.js';
import { sendMethodNotAllowed } from '../../http/refusal.js';
import { isScheduleKey, type Schedule, type ScheduleRequest } from '../../schedules/schedule.js';
import type { ScheduleService } from '../../schedules/service.js';
import { handleOf } from '../../tasks/handle.js';
import type { Operation } from '../../tasks/scopes.js';
import type { Actor } from '../../tasks/service.js';
import type { Task } from '../../tasks/task.js';
import { mayReadPayloads } from '../../tasks/visibility.js';
import { pageHeaders } from './paging.js';
import { managedWorkOf } from './work-body.js';

/** What the REST face lends these routes: the same checks and shapes as its own. */
export interface ScheduleRouteDeps {
  schedules: ScheduleService;
  actorFor(req: IncomingMessage, operation: Operation, taskId?: string | null): Promise<Actor>;
  objectBody(req: IncomingMessage): Promise<Record<string, unknown>>;
  retryAfter(task: Task): Record<string, string>;
}

/** A schedule as REST shows it: policies in lower case like statuses, `input` to its owner. */
export function scheduleView(schedule: Schedule, viewer: Actor) {
  const owner = mayReadPayloads(schedule, viewer);
  return {
    key: schedule.key,
    cron: schedule.cron,
    timezone: schedule.timezone,
    kind: schedule.kind,
    ...(owner ? { input: schedule.input } : {}),
    missed: schedule.missed,
    overlap: schedule.overlap,
    paused: schedule.paused,
    priority: schedule.priority,
    labels: schedule.labels,
    retry: schedule.retry,
    ttlMs: schedule.ttlMs,
    concurrencyKey: schedule.concurrencyKey,
    nextRunAt: schedule.nextRunAt?.toISOString() ?? null,
    lastRunAt: schedule.lastRunAt?.toISOString() ?? null,
    lastTaskId: schedule.lastTaskId,
    createdAt: schedule.createdAt.toISOString(),
    updatedAt: schedule.updatedAt.toISOString(),
    ...(viewer.admin ? { owner: schedule.owner } : {}),
  };
}

function policy<T extends string>(value: unknown, name: string, allowed: readonly T[]): T | null {
  if (value === undefined || value === null) return null;
  const lower = typeof value === 'string' ? value.toLowerCase() : '';
  if (!allowed.includes(lower as T))
    throw new ServiceError('BAD_USER_INPUT', `${name} must be one of ${allowed.join(', ')}.`);
  return lower as T;
}

/** `PUT /v1/schedules/{key}`'s body: the ScheduleInput of DESIGN §17, its key in the path. */
function scheduleRequestOf(key: string, body: Record<string, unknown>): ScheduleRequest {
  if (body.key !== undefined && body.key !== key)
    throw new ServiceError('BAD_USER_INPUT', 'key in the body differs from the key in the path.');
  for (const name of ['cron', 'kind'] as const)
    if (typeof body[name] !== 'string')
      throw new ServiceError('BAD_USER_INPUT', `${name} must be a string.`);
  if (body.timezone != null && typeof body.timezone !== 'string')
    throw new ServiceError('BAD_USER_INPUT', 'timezone must be a string.');
  if (body.paused != null && typeof body.paused !== 'boolean')
    throw new ServiceError('BAD_USER_INPUT', 'paused must be true or false.');
  if (body.ttlMs != null && !Number.isInteger(body.ttlMs))
    throw new ServiceError('BAD_USER_INPUT', 'ttlMs must be an integer.');
  const { priority, concurrencyKey, retry } = managedWorkOf(body);
  return {
    key,
    cron: body.cron as string,
    timezone: (body.timezone as string | null | undefined) ?? null,
    kind: body.kind as string,
    input: body.input,
    missed: policy(body.missed, 'missed', ['skip', 'once', 'all']),
    overlap: policy(body.overlap, 'overlap', ['allow', 'skip']),
    paused: (body.paused as boolean | null | undefined) ?? null,
    priority: priority ?? null,
    labels: body.labels,
    retry: retry ?? null,
    ttlMs: (body.ttlMs as number | null | undefined) ?? null,
    concurrencyKey: concurrencyKey ?? null,
  };
}

/**
 * DESIGN §17 over REST: `GET /v1/schedules`, `GET/PUT/DELETE /v1/schedules/{key}` and
 * `POST /v1/schedules/{key}/trigger`. Admins name another owner with `?owner=`.
 */
export function scheduleRoutes(deps: ScheduleRouteDeps) {
  const { schedules, actorFor, objectBody, retryAfter } = deps;

  return async function routeSchedules(
    req: IncomingMessage,
    res: ServerResponse,
    url: URL,
  ): Promise<void> {
    const parts = url.pathname.split('/').filter(Boolean); // ['v1', 'schedules', key?, 'trigger'?]
    const method = req.method ?? 'GET';
    const owner = url.searchParams.get('owner');
    let key: string | undefined;
    try {
      key = parts[2] === undefined ? undefined : decodeURIComponent(parts[2]);
    } catch {
      throw notFound('Schedule');
    }
    // A path that cannot name a schedule names none (404), as for tasks; saving one there is
    // a bad key (422).
    if (key !== undefined && method !== 'PUT' && !isScheduleKey(key)) throw notFound('Schedule');

    if (parts.length === 2 && method === 'GET') {
      const actor = await actorFor(req, 'schedules');
      const limit = url.searchParams.get('limit');
      const page = await schedules.list(actor, {
        first: limit === null ? null : Number(limit),
        after: url.searchParams.get('cursor'),
        owner,
      });
      const nextCursor = page.hasNextPage ? page.endCursor : null;
      const views = page.schedules.map((s) => scheduleView(s, actor));
      return sendJson(res, 200, { schedules: views, nextCursor }, pageHeaders(url, nextCursor));
    }
    if (parts.length === 3 && key !== undefined && method === 'GET') {
      const actor = await actorFor(req, 'schedule');
      const schedule = await schedules.get(actor, key, owner);
      if (!schedule) throw notFound('Schedule');
      return sendJson(res, 200, scheduleView(schedule, actor));
    }
    if (parts.length === 3 && key !== undefined && method === 'PUT') {
      const actor = await actorFor(req, 'upsertSchedule');
      const request = scheduleRequestOf(key, await objectBody(req));
      const schedule = await schedules.upsert(actor, request, owner);
      return sendJson(res, 200, scheduleView(schedule, actor));
    }
    if (parts.length === 3 && key !== undefined && method === 'DELETE') {
      const actor = await actorFor(req, 'deleteSchedule');
      if (!(await schedules.remove(actor, key, owner))) throw notFound('Schedule');
      res.writeHead(204).end();
      return;
    }
    if (parts.length === 4 && key !== undefined && parts[3] === 'trigger' && method === 'POST') {
      const actor = await actorFor(req, 'triggerSchedule');
      const task = await schedules.trigger(actor, key, owner);
      return sendJson(res, 202, handleOf(task), {
        location: `/v1/jobs/${task.id}`,
        ...retryAfter(task),
      });
    }
    const allowed =
      parts.length === 2
        ? 'GET'
        : parts.length === 3
          ? 'GET, PUT, DELETE'
          : parts.length === 4 && parts[3] === 'trigger'
            ? 'POST'
            : undefined;
    if (allowed) return sendMethodNotAllowed(res, allowed, `Use ${allowed}.`);
    return sendProblem(res, 404, 'NOT_FOUND', 'No such route.');
  };
}
