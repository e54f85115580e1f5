import { notFound } from '../../errors.js';
import { reportOf } from '../../tasks/handle.js';
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from '../../tasks/requests.js';
import { filterOfQuery } from './filter.js';
import { integer, listOf, ref, string } from './json-schema.js';
import { pageHeaders } from './paging.js';
import { TASK_ID } from './params.js';
import { accepted, retryAfter } from './replies.js';
import type { GuardedRoute, Parameter } from './route.js';
import { startRequestOf } from './start-body.js';
import { withSteps } from './steps.js';

/** DESIGN §6: a job started, listed, read, cancelled and answered, at `/v1/jobs`. */

const TAGS = ['jobs'];

/** `limit` and `cursor`, as every list of the face takes them. */
export const PAGE_PARAMETERS: readonly Parameter[] = [
  {
    name: 'limit',
    in: 'query',
    description: `Page size, 1..${MAX_PAGE_SIZE}; default ${DEFAULT_PAGE_SIZE}.`,
    schema: integer(),
  },
  {
    name: 'cursor',
    in: 'query',
    description: 'The `nextCursor` of the page before (also in its `Link: rel="next"`).',
    schema: string(),
  },
];

const repeated = (name: string, description: string): Parameter => ({
  name,
  in: 'query',
  description,
  schema: listOf(string()),
});

const FILTER_PARAMETERS: readonly Parameter[] = [
  repeated('status', 'Statuses, lower-case; repeated or comma-separated.'),
  repeated('kind', 'Kinds; repeated or comma-separated.'),
  repeated('label', '`key:value`, repeated: every pair must match.'),
  { name: 'createdAfter', in: 'query', description: 'Inclusive.', schema: string() },
  { name: 'createdBefore', in: 'query', description: 'Exclusive.', schema: string() },
  { name: 'owner', in: 'query', description: 'Admins: whose tasks.', schema: string() },
  { name: 'parentId', in: 'query', description: 'Children of this task.', schema: string() },
];

const IDEMPOTENCY_KEY: Parameter = {
  name: 'Idempotency-Key',
  in: 'header',
  description:
    '1..255 printable ASCII. The same key and request again answers with the same task; ' +
    'another request under the key is IDEMPOTENCY_KEY_REUSED.',
  schema: string(),
};

const HANDLE_ANSWER = {
  description: 'The handle, with what the caller may see of the outcome.',
  schema: ref('TaskReport'),
  optionalHeaders: ['Retry-After'],
} as const;

export const JOB_ROUTES: readonly GuardedRoute[] = [
  {
    method: 'POST',
    path: '/v1/jobs',
    operationId: 'startTask',
    summary: 'Start a task',
    tags: TAGS,
    operation: 'startTask',
    parameters: [IDEMPOTENCY_KEY],
    body: { description: 'The task to start.', schema: ref('StartTask'), empty: {} },
    answers: {
      202: {
        description: 'Accepted: the handle, where to poll it and when.',
        schema: ref('TaskHandle'),
        headers: ['Location'],
        optionalHeaders: ['Retry-After'],
      },
    },
    refusals: { 422: ['BAD_USER_INPUT', 'IDEMPOTENCY_KEY_REUSED'] },
    async serve({ services, actor, body, headers }) {
      const key = headers['idempotency-key'];
      const request = startRequestOf(
        body as Record<string, unknown>,
        typeof key === 'string' ? key : null,
      );
      const { task } = await services.tasks.start(actor, request);
      return accepted(task);
    },
  },
  {
    method: 'GET',
    path: '/v1/jobs',
    operationId: 'listTasks',
    summary: "The caller's tasks, newest first",
    tags: TAGS,
    operation: 'tasks',
    parameters: [...PAGE_PARAMETERS, ...FILTER_PARAMETERS],
    answers: {
      200: {
        description: 'A page of tasks.',
        schema: ref('TaskList'),
        optionalHeaders: ['Link'],
      },
    },
    refusals: { 422: ['BAD_USER_INPUT'] },
    async serve({ services, actor, query, url }) {
      const limit = query.get('limit');
      const page = await services.tasks.list(actor, {
        first: limit === null ? null : Number(limit),
        after: query.get('cursor'),
        filter: filterOfQuery(query),
      });
      const nextCursor = page.hasNextPage ? page.endCursor : null;
      return {
        status: 200,
        body: { tasks: page.tasks.map((t) => reportOf(t, actor)), nextCursor },
        headers: pageHeaders(url, nextCursor),
      };
    },
  },
  {
    method: 'GET',
    path: '/v1/jobs/{taskId}',
    operationId: 'getTask',
    summary: "A task's status monitor, with its journal",
    tags: TAGS,
    operation: 'task',
    params: { taskId: TASK_ID },
    answers: { 200: HANDLE_ANSWER },
    refusals: { 404: ['NOT_FOUND'] },
    async serve({ services, actor, params }) {
      const task = await services.tasks.get(actor, params.taskId!);
      if (!task) throw notFound();
      const report = await withSteps(services.tasks, actor, task, reportOf(task, actor));
      return { status: 200, body: report, headers: retryAfter(task) };
    },
  },
  {
    method: 'DELETE',
    path: '/v1/jobs/{taskId}',
    operationId: 'cancelTask',
    summary: 'Cancel a task',
    tags: TAGS,
    operation: 'cancelTask',
    params: { taskId: TASK_ID },
    answers: { 200: { description: 'The cancelled task.', schema: ref('TaskReport') } },
    refusals: { 404: ['NOT_FOUND'], 409: ['TASK_TERMINAL'] },
    async serve({ services, actor, params }) {
      const task = await services.tasks.cancel(actor, params.taskId!);
      return { status: 200, body: reportOf(task, actor) };
    },
  },
  {
    method: 'POST',
    path: '/v1/jobs/{taskId}/input',
    operationId: 'provideTaskInput',
    summary: 'Answer the question a task asks',
    tags: TAGS,
    operation: 'provideTaskInput',
    params: { taskId: TASK_ID },
    body: { description: 'The answer.', schema: ref('AnswerInput'), empty: {} },
    answers: { 200: HANDLE_ANSWER },
    refusals: { 404: ['NOT_FOUND'], 409: ['TASK_TERMINAL', 'NOT_AWAITING_INPUT'] },
    async serve({ services, actor, params, body }) {
      const { key, value } = body as { key: string; value: unknown };
      const task = await services.tasks.provideInput(actor, params.taskId!, key, value);
      return { status: 200, body: reportOf(task, actor), headers: retryAfter(task) };
    },
  },
];
