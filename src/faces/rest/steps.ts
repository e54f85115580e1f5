import type { TaskReport } from '../../tasks/handle.js';
import type { Actor, TaskService } from '../../tasks/service.js';
import type { TaskStep } from '../../tasks/steps/view.js';
import type { Task } from '../../tasks/task.js';
import { mayReadPayloads } from '../../tasks/visibility.js';
import { anyJson, ref } from './json-schema.js';
import { SIGNAL_NAME, TASK_ID } from './params.js';
import { accepted } from './replies.js';
import type { GuardedRoute } from './route.js';

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
  const [steps] = await tasks.journals.stepsOf(actor, [task]);
  const owner = mayReadPayloads(task, actor);
  return { ...report, steps: (steps ?? []).map((step) => stepReportOf(step, owner)) };
}

/**
 * `POST /v1/jobs/{taskId}/signals/{name}`: the body (any JSON; none reads as null) is the
 * payload. `202` with the handle.
 */
export const SIGNAL_ROUTE: GuardedRoute = {
  method: 'POST',
  path: '/v1/jobs/{taskId}/signals/{name}',
  operationId: 'signalTask',
  summary: 'Send a task a signal',
  description:
    'The first payload for a name is kept, also when it arrives before the handler waits for ' +
    'it; the same payload again answers as the first did; another is SIGNAL_ALREADY_SENT.',
  tags: ['jobs'],
  operation: 'signalTask',
  params: { taskId: TASK_ID, name: SIGNAL_NAME },
  body: { description: 'The payload: any JSON.', schema: anyJson('The payload.'), empty: null },
  answers: {
    202: {
      description: 'Accepted: the task’s handle.',
      schema: ref('TaskHandle'),
      headers: ['Location'],
      optionalHeaders: ['Retry-After'],
    },
  },
  refusals: {
    404: ['NOT_FOUND'],
    409: ['TASK_TERMINAL', 'SIGNAL_ALREADY_SENT'],
    422: ['BAD_USER_INPUT'],
  },
  async serve({ services, actor, params, body }) {
    const { task } = await services.tasks.journals.signal(
      actor,
      params.taskId!,
      params.name!,
      body,
    );
    return accepted(task);
  },
};
