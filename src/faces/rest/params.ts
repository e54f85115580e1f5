import { notFound, ServiceError } from '../../errors.js';
import { isScheduleKey } from '../../schedules/schedule.js';
import { isTaskId } from '../../tasks/validation.js';
import { string, uuid } from './json-schema.js';
import type { PathParam } from './route.js';

/** The path parameters of the REST face: how each is documented, and read from its segment. */

function decoded(segment: string, refusal: () => ServiceError): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw refusal();
  }
}

/** A segment that cannot be a taskId names no task: 404, like any unknown id (not 422). */
export const TASK_ID: PathParam = {
  description: 'The taskId of the handle.',
  schema: uuid(),
  read(segment) {
    if (!isTaskId(segment)) throw notFound();
    return segment;
  },
};

/** A schedule's key, percent-encoded; one that cannot be a key names none (404), as for tasks. */
export const SCHEDULE_KEY: PathParam = {
  description: 'The schedule’s key: 1..128 printable ASCII characters, percent-encoded.',
  schema: string(),
  read(segment) {
    const key = decoded(segment, () => notFound('Schedule'));
    if (!isScheduleKey(key)) throw notFound('Schedule');
    return key;
  },
};

/** The key a schedule is saved under: a bad one is the domain's to refuse (422). */
export const NEW_SCHEDULE_KEY: PathParam = {
  ...SCHEDULE_KEY,
  read: (segment) => decoded(segment, () => notFound('Schedule')),
};

export const SIGNAL_NAME: PathParam = {
  description: 'The signal’s name, percent-encoded.',
  schema: string(),
  read: (segment) =>
    decoded(
      segment,
      () => new ServiceError('BAD_USER_INPUT', 'The signal name in the path is not valid UTF-8.'),
    ),
};

export const SIGNAL_TOKEN: PathParam = {
  description: 'The token of a signal URL, as `ctx.signalUrl` minted it.',
  schema: string(),
  read: (segment) => segment,
};
