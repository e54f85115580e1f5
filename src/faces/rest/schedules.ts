import { notFound, ServiceError } from '../../errors.js';
import type {
  MissedPolicy,
  OverlapPolicy,
  Schedule,
  ScheduleRequest,
} from '../../schedules/schedule.js';
import type { Actor } from '../../tasks/service.js';
import { mayReadPayloads } from '../../tasks/visibility.js';
import { PAGE_PARAMETERS } from './jobs.js';
import { ref, string } from './json-schema.js';
import { pageHeaders } from './paging.js';
import { NEW_SCHEDULE_KEY, SCHEDULE_KEY } from './params.js';
import { accepted } from './replies.js';
import type { GuardedRoute, Parameter } from './route.js';

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

const lower = <T extends string>(value: string | null | undefined) =>
  value == null ? null : (value.toLowerCase() as T);

/** `PUT /v1/schedules/{key}`'s body, valid against ScheduleInput, its key in the path. */
function scheduleRequestOf(key: string, body: ScheduleBody): ScheduleRequest {
  if (body.key !== undefined && body.key !== key)
    throw new ServiceError('BAD_USER_INPUT', 'key in the body differs from the key in the path.');
  return {
    key,
    cron: body.cron,
    timezone: body.timezone ?? null,
    kind: body.kind,
    input: body.input,
    missed: lower<MissedPolicy>(body.missed),
    overlap: lower<OverlapPolicy>(body.overlap),
    paused: body.paused ?? null,
    priority: body.priority ?? null,
    labels: body.labels,
    retry: body.retry ?? null,
    ttlMs: body.ttlMs ?? null,
    concurrencyKey: body.concurrencyKey ?? null,
  };
}

type ScheduleBody = Omit<ScheduleRequest, 'missed' | 'overlap'> & {
  missed?: string | null;
  overlap?: string | null;
};

const TAGS = ['schedules'];

const OWNER: Parameter = {
  name: 'owner',
  in: 'query',
  description: 'Admins: whose schedule.',
  schema: string(),
};

const SCHEDULE_ANSWER = { description: 'The schedule.', schema: ref('Schedule') };

/**
 * DESIGN §17 over REST: `GET /v1/schedules`, `GET/PUT/DELETE /v1/schedules/{key}` and
 * `POST /v1/schedules/{key}/trigger`. Admins name another owner with `?owner=`.
 */
export const SCHEDULE_ROUTES: readonly GuardedRoute[] = [
  {
    method: 'GET',
    path: '/v1/schedules',
    operationId: 'listSchedules',
    summary: "The caller's schedules, by key",
    tags: TAGS,
    operation: 'schedules',
    parameters: [...PAGE_PARAMETERS, OWNER],
    answers: {
      200: {
        description: 'A page of schedules.',
        schema: ref('ScheduleList'),
        optionalHeaders: ['Link'],
      },
    },
    refusals: { 422: ['BAD_USER_INPUT'] },
    async serve({ services, actor, query, url }) {
      const limit = query.get('limit');
      const page = await services.schedules.list(actor, {
        first: limit === null ? null : Number(limit),
        after: query.get('cursor'),
        owner: query.get('owner'),
      });
      const nextCursor = page.hasNextPage ? page.endCursor : null;
      const views = page.schedules.map((s) => scheduleView(s, actor));
      return {
        status: 200,
        body: { schedules: views, nextCursor },
        headers: pageHeaders(url, nextCursor),
      };
    },
  },
  {
    method: 'GET',
    path: '/v1/schedules/{key}',
    operationId: 'getSchedule',
    summary: 'A schedule',
    tags: TAGS,
    operation: 'schedule',
    params: { key: SCHEDULE_KEY },
    parameters: [OWNER],
    answers: { 200: SCHEDULE_ANSWER },
    refusals: { 404: ['NOT_FOUND'] },
    async serve({ services, actor, params, query }) {
      const schedule = await services.schedules.get(actor, params.key!, query.get('owner'));
      if (!schedule) throw notFound('Schedule');
      return { status: 200, body: scheduleView(schedule, actor) };
    },
  },
  {
    method: 'PUT',
    path: '/v1/schedules/{key}',
    operationId: 'upsertSchedule',
    summary: 'Create or replace a schedule',
    tags: TAGS,
    operation: 'upsertSchedule',
    params: { key: NEW_SCHEDULE_KEY },
    parameters: [OWNER],
    body: { description: 'The schedule.', schema: ref('ScheduleInput'), empty: {} },
    answers: { 200: SCHEDULE_ANSWER },
    refusals: { 422: ['BAD_USER_INPUT'] },
    async serve({ services, actor, params, query, body }) {
      const request = scheduleRequestOf(params.key!, body as ScheduleBody);
      const schedule = await services.schedules.upsert(actor, request, query.get('owner'));
      return { status: 200, body: scheduleView(schedule, actor) };
    },
  },
  {
    method: 'DELETE',
    path: '/v1/schedules/{key}',
    operationId: 'deleteSchedule',
    summary: 'Delete a schedule',
    tags: TAGS,
    operation: 'deleteSchedule',
    params: { key: SCHEDULE_KEY },
    parameters: [OWNER],
    answers: { 204: { description: 'Deleted.' } },
    refusals: { 404: ['NOT_FOUND'] },
    async serve({ services, actor, params, query }) {
      if (!(await services.schedules.remove(actor, params.key!, query.get('owner'))))
        throw notFound('Schedule');
      return { status: 204 };
    },
  },
  {
    method: 'POST',
    path: '/v1/schedules/{key}/trigger',
    operationId: 'triggerSchedule',
    summary: 'Start a schedule’s task now',
    tags: TAGS,
    operation: 'triggerSchedule',
    params: { key: SCHEDULE_KEY },
    parameters: [OWNER],
    answers: {
      202: {
        description: 'Accepted: the task’s handle.',
        schema: ref('TaskHandle'),
        headers: ['Location'],
        optionalHeaders: ['Retry-After'],
      },
    },
    refusals: { 404: ['NOT_FOUND'], 422: ['BAD_USER_INPUT'] },
    async serve({ services, actor, params, query }) {
      return accepted(await services.schedules.trigger(actor, params.key!, query.get('owner')));
    },
  },
];
