import { handleOf } from '../../tasks/handle.js';
import { MAX_BATCH_SIZE } from '../../tasks/requests.js';
import { type FilterBody, filterOfBody } from './filter.js';
import { ref } from './json-schema.js';
import { TASK_ID } from './params.js';
import { accepted } from './replies.js';
import type { GuardedRoute } from './route.js';
import { startRequestOf } from './start-body.js';

/**
 * DESIGN §15 on `/v1/jobs`: `POST /v1/jobs/batch`, `POST /v1/jobs/cancel` and
 * `POST /v1/jobs/{taskId}/retry` (its body, if any, may name `fromStep`, §16).
 */

const TAGS = ['jobs'];

export const MANY_ROUTES: readonly GuardedRoute[] = [
  {
    method: 'POST',
    path: '/v1/jobs/batch',
    operationId: 'startTasks',
    summary: 'Start many tasks at once',
    description:
      `At most ${MAX_BATCH_SIZE}, validated first (a bad entry is refused naming its index ` +
      'in `index`, and nothing is stored), stored in one transaction.',
    tags: TAGS,
    operation: 'startTasks',
    body: {
      description: 'The tasks to start.',
      schema: ref('StartBatch'),
      empty: {},
      entries: 'jobs',
    },
    answers: {
      202: { description: 'Accepted: their handles, in order.', schema: ref('Batch') },
    },
    refusals: { 422: ['BAD_USER_INPUT', 'IDEMPOTENCY_KEY_REUSED'] },
    async serve({ services, actor, body }) {
      const { jobs } = body as { jobs: Array<Record<string, unknown>> };
      const requests = jobs.map(({ idempotencyKey, ...entry }) =>
        startRequestOf(entry, (idempotencyKey as string | null | undefined) ?? null),
      );
      const started = await services.tasks.startMany(actor, requests);
      return { status: 202, body: { jobs: started.map(handleOf) } };
    },
  },
  {
    method: 'POST',
    path: '/v1/jobs/cancel',
    operationId: 'cancelTasks',
    summary: 'Cancel every task a filter matches',
    tags: TAGS,
    operation: 'cancelTasks',
    body: {
      description: 'The filter itself.',
      schema: ref('TaskFilter'),
      empty: {},
      name: 'filter',
    },
    answers: {
      200: {
        description: 'How many matched, and how many were cancelled.',
        schema: ref('CancelResult'),
      },
    },
    refusals: { 422: ['BAD_USER_INPUT'] },
    async serve({ services, actor, body }) {
      const result = await services.tasks.cancelMany(actor, filterOfBody(body as FilterBody));
      return { status: 200, body: result };
    },
  },
  {
    method: 'POST',
    path: '/v1/jobs/{taskId}/retry',
    operationId: 'retryTask',
    summary: 'Run a failed or cancelled task again, as a new task',
    tags: TAGS,
    operation: 'retryTask',
    params: { taskId: TASK_ID },
    body: { description: 'Optional: where to re-run from.', schema: ref('RetryTask'), empty: {} },
    answers: {
      202: {
        description: 'Accepted: the new task’s handle.',
        schema: ref('TaskHandle'),
        headers: ['Location'],
        optionalHeaders: ['Retry-After'],
      },
    },
    refusals: { 404: ['NOT_FOUND'], 409: ['TASK_NOT_RETRYABLE'], 422: ['BAD_USER_INPUT'] },
    async serve({ services, actor, params, body }) {
      const { fromStep } = body as { fromStep?: string | null };
      return accepted(
        await services.tasks.retry(actor, params.taskId!, { fromStep: fromStep ?? null }),
      );
    },
  },
];
