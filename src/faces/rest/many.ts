import type { IncomingMessage, ServerResponse } from 'node:http';
import { ServiceError } from '../../errors.js';
import { sendJson } from '../../http/problem.js';
import { handleOf } from '../../tasks/handle.js';
import type { Operation } from '../../tasks/scopes.js';
import type { Actor, StartRequest, TaskService } from '../../tasks/service.js';
import type { Task } from '../../tasks/task.js';
import { filterOfBody } from './filter.js';

/** What the REST face lends these routes: the same checks and shapes as its own. */
export interface ManyRouteDeps {
  tasks: TaskService;
  actorFor(req: IncomingMessage, operation: Operation, taskId?: string | null): Promise<Actor>;
  objectBody(req: IncomingMessage): Promise<Record<string, unknown>>;
  retryAfter(task: Task): Record<string, string>;
  startRequestOf(body: Record<string, unknown>, idempotencyKey: string | null): StartRequest;
}

/**
 * DESIGN §15 on `/v1/jobs`: `POST /v1/jobs/batch`, `POST /v1/jobs/cancel` and
 * `POST /v1/jobs/{id}/retry` (its body, if any, may name `fromStep`, §16). The handler
 * resolves false for a path that is none of these.
 */
export function manyRoutes(deps: ManyRouteDeps) {
  const { tasks, actorFor, objectBody, retryAfter, startRequestOf } = deps;

  return async function routeMany(
    req: IncomingMessage,
    res: ServerResponse,
    name: string,
    taskId: string | null,
  ): Promise<boolean> {
    if (name === 'batch') {
      const actor = await actorFor(req, 'startTasks');
      const body = await objectBody(req);
      if (!Array.isArray(body.jobs))
        throw new ServiceError('BAD_USER_INPUT', 'jobs must be a list of tasks to start.');
      const requests = body.jobs.map((entry: unknown, index: number) => {
        if (entry === null || typeof entry !== 'object' || Array.isArray(entry))
          throw new ServiceError('BAD_USER_INPUT', `entry ${index}: must be an object.`, { index });
        const { idempotencyKey, ...rest } = entry as Record<string, unknown>;
        if (
          idempotencyKey !== undefined &&
          idempotencyKey !== null &&
          typeof idempotencyKey !== 'string'
        )
          throw new ServiceError(
            'BAD_USER_INPUT',
            `entry ${index}: idempotencyKey must be a string.`,
            { index },
          );
        try {
          return startRequestOf(rest, (idempotencyKey as string | null | undefined) ?? null);
        } catch (err) {
          if (!(err instanceof ServiceError)) throw err;
          throw new ServiceError(err.code, `entry ${index}: ${err.message}`, { index });
        }
      });
      const started = await tasks.startMany(actor, requests);
      sendJson(res, 202, { jobs: started.map(handleOf) });
      return true;
    }
    if (name === 'cancel') {
      const actor = await actorFor(req, 'cancelTasks');
      const body = await objectBody(req);
      const result = await tasks.cancelMany(actor, filterOfBody(body));
      sendJson(res, 200, result);
      return true;
    }
    if (name === 'retry' && taskId) {
      const actor = await actorFor(req, 'retryTask', taskId);
      const { fromStep } = await objectBody(req);
      if (fromStep !== undefined && fromStep !== null && typeof fromStep !== 'string')
        throw new ServiceError('BAD_USER_INPUT', 'fromStep must be a step name (a string).');
      const task = await tasks.retry(actor, taskId, { fromStep: fromStep ?? null });
      sendJson(res, 202, handleOf(task), { location: `/v1/jobs/${task.id}`, ...retryAfter(task) });
      return true;
    }
    return false;
  };
}
