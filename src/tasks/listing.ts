import type { Kysely } from 'kysely';
import type { Database } from '../db/types.js';
import { decodeCursor, encodeCursor } from './cursor.js';
import type { CheckedFilter } from './filter.js';
import type { TaskPage } from './requests.js';
import { listTasks } from './sql/list.js';
import type { TaskStatus } from './status.js';
import { toTask } from './task.js';

export interface PageRequest {
  first: number;
  /** A cursor from an earlier page's `endCursor`. */
  after?: string | null | undefined;
  statuses?: readonly TaskStatus[] | null | undefined;
  filter?: CheckedFilter | null | undefined;
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
