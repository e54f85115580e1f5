import { handleOf, retryAfterSeconds } from '../../tasks/handle.js';
import type { Task } from '../../tasks/task.js';
import type { Reply } from './route.js';

/** `Retry-After` while the task is not terminal: its poll interval in whole seconds. */
export function retryAfter(task: Task): Record<string, string> {
  const seconds = retryAfterSeconds(task);
  return seconds === undefined ? {} : { 'retry-after': String(seconds) };
}

/** `202 Accepted` with the handle, where to poll it (`Location`) and when (`Retry-After`). */
export function accepted(task: Task): Reply {
  return {
    status: 202,
    body: handleOf(task),
    headers: { location: `/v1/jobs/${task.id}`, ...retryAfter(task) },
  };
}
