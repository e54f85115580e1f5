import type { IncomingMessage, ServerResponse } from 'node:http';
import { ServiceError } from '../../errors.js';
import { readJson } from '../../http/json-body.js';
import { sendJson } from '../../http/problem.js';
import { HttpRefusal, sendMethodNotAllowed } from '../../http/refusal.js';
import { handleOf, type TaskReport } from '../../tasks/handle.js';
import type { Operation } from '../../tasks/scopes.js';
import type { Actor, TaskService } from '../../tasks/service.js';
import type { TaskStep } from '../../tasks/steps/view.js';
import type { Task } from '../../tasks/task.js';
import { mayReadPayloads } from '../../tasks/visibility.js';

/**
 * DESIGN §16 on `/v1/jobs`: `POST /v1/jobs/{id}/signals/{name}`, and the journal that
 * `GET /v1/jobs/{id}` shows. States read in lower case, as statuses do here.
 */

/** A journal entry as REST shows it: unset fields left out, as in the handle. */
export interface StepReport {
  name: string;
  state: Lowercase<TaskStep['state']>;
  attempts: number;
  startedAt: string;
  endedAt?: string;
  wakeAt?: string;
  childId?: string;
  /** Owner only, while the step waits for its signal. */
  signalUrl?: string;
  error?: TaskStep['error'];
  /** Owner only, once the step completed. */
  result?: unknown;
}

function stepReportOf(step: TaskStep, owner: boolean): StepReport {
  const report: StepReport = {
    name: step.name,
    state: step.state.toLowerCase() as StepReport['state'],
    attempts: step.attempts,
    startedAt: step.startedAt.toISOString(),
  };
  if (step.endedAt) report.endedAt = step.endedAt.toISOString();
  if (step.wakeAt) report.wakeAt = step.wakeAt.toISOString();
  if (step.childId) report.childId = step.childId;
  if (step.signalUrl) report.signalUrl = step.signalUrl;
  if (step.error) report.error = step.error;
  if (owner && step.state === 'COMPLETED') report.result = step.result ?? null;
  return report;
}

/**
 * The status monitor's body with the task's journal (`steps`, `[]` when none), read for the
 * task just read: one statement, no audit line of its own.
 */
export async function withSteps(
  tasks: TaskService,
  actor: Actor,
  task: Task,
  report: TaskReport,
): Promise<TaskReport & { steps: StepReport[] }> {
  const [steps] = await tasks.stepsOf(actor, [task]);
  const owner = mayReadPayloads(task, actor);
  return { ...report, steps: (steps ?? []).map((step) => stepReportOf(step, owner)) };
}

/** What the REST face lends these routes: the same checks as its own. */
export interface StepRouteDeps {
  tasks: TaskService;
  actorFor(req: IncomingMessage, operation: Operation, taskId?: string | null): Promise<Actor>;
  retryAfter(task: Task): Record<string, string>;
  /** The path's task id; 404 for a segment that cannot be one. */
  taskIdOf(id: string): string;
}

/** The signal name of a path segment, percent-decoded. */
function nameOf(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw new ServiceError('BAD_USER_INPUT', 'The signal name in the path is not valid UTF-8.');
  }
}

/**
 * `POST /v1/jobs/{id}/signals/{name}`: the body (any JSON; none reads as null) is the payload.
 * `202` with the handle; `409` SIGNAL_ALREADY_SENT, `422` BAD_USER_INPUT. Resolves false for
 * any other path.
 */
export function stepRoutes(deps: StepRouteDeps) {
  const { tasks, actorFor, retryAfter, taskIdOf } = deps;

  return async function routeSteps(
    req: IncomingMessage,
    res: ServerResponse,
    parts: readonly string[],
  ): Promise<boolean> {
    const [, , id, sub, name] = parts;
    if (parts.length !== 5 || sub !== 'signals' || !id || !name) return false;
    if (req.method !== 'POST') {
      sendMethodNotAllowed(res, 'POST', 'Use POST.');
      return true;
    }
    const actor = await actorFor(req, 'signalTask', id);
    const taskId = taskIdOf(id);
    const body = await readJson(req, { empty: null });
    if (!body.ok) throw new HttpRefusal(400, 'BAD_USER_INPUT', 'The body is not valid JSON.');
    const { task } = await tasks.signal(actor, taskId, nameOf(name), body.value);
    sendJson(res, 202, handleOf(task), { location: `/v1/jobs/${task.id}`, ...retryAfter(task) });
    return true;
  };
}
