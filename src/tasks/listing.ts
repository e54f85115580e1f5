import type { Kysely } from 'kysely';
import type { Database } from '../db/types.js';
import { ServiceError } from '../errors.js';
import { decodeCursor, encodeCursor } from './cursor.js';
import { type CheckedFilter, checkFilter } from './filter.js';
import {
  type Actor,
  DEFAULT_PAGE_SIZE,
  type ListRequest,
  MAX_PAGE_SIZE,
  type TaskPage,
} from './requests.js';
import { listTasks } from './sql/list.js';
import type { TaskStatus } from './status.js';
import { toTask } from './task.js';
import { ownerFor } from './visibility.js';

export interface PageRequest {
  first: number;
  /** A cursor from an earlier page's `endCursor`. */
  after?: string | null | undefined;
  statuses?: readonly TaskStatus[] | null | undefined;
  filter?: CheckedFilter | null | undefined;
}

/**
 * One page of the actor's tasks (admins: `owner`'s), as a face asks for it: `first` checked,
 * the owner and filter resolved.
 * @throws ServiceError BAD_USER_INPUT for `first` out of range or a bad filter; FORBIDDEN when
 *   a non-admin names another principal
 */
export function listFor(
  db: Kysely<Database>,
  actor: Actor,
  request: ListRequest,
): Promise<TaskPage> {
  const first = request.first ?? DEFAULT_PAGE_SIZE;
  if (!Number.isInteger(first) || first < 1 || first > MAX_PAGE_SIZE) {
    throw new ServiceError('BAD_USER_INPUT', `first must be between 1 and ${MAX_PAGE_SIZE}.`);
  }
  const owner = ownerFor(actor, request.owner ?? request.filter?.owner, 'list');
  return listPage(db, owner, {
    first,
    after: request.after,
    statuses: request.statuses,
    filter: checkFilter(request.filter),
  });
}

/**
 * One page of `owner`'s unexpired tasks, newest first.
 * @throws ServiceError BAD_USER_INPUT for a malformed cursor
 */
export async function listPage(
  db: Kysely<Database>,
  owner: string,
  request: PageRequest,
): Promise<TaskPage> {
  const { rows, hasNextPage } = await listTasks(db, {
    owner,
    statuses: request.statuses ?? null,
    filter: request.filter ?? null,
    first: request.first,
    after: request.after ? decodeCursor(request.after) : null,
  });
  const tasks = rows.map((row) => toTask(row));
  const last = tasks.at(-1);
  return { tasks, hasNextPage, endCursor: last ? encodeCursor(last) : null };
}
