import type { Kysely } from 'kysely';
import type { Database } from '../db/types.js';
import { ServiceError } from '../errors.js';
import { decodeCursor, encodeCursor } from './cursor.js';
import { listRecentTasks } from './sql/recent.js';
import type { TaskStatus } from './status.js';
import { type Task, toTask } from './task.js';
import { isTaskId } from './validation.js';

/** The largest page of a most-recently-updated list. */
export const MAX_RECENT_PAGE_SIZE = 100;

export interface RecentRequest {
  /** 1..MAX_RECENT_PAGE_SIZE. */
  pageSize: number;
  /** Where the previous page ended, as its `nextPageToken` said. */
  pageToken?: string | null;
  statuses?: readonly TaskStatus[] | null;
  /** Only this task; an id that is not a task's matches nothing. */
  id?: string | null;
  updatedSince?: Date | null;
}

export interface RecentPage {
  tasks: Task[];
  /** The position after this page's last task; null on the last page. */
  nextPageToken: string | null;
  /** How many tasks match the request over all pages. */
  totalSize: number;
}

/**
 * One page of `owner`'s tasks, most recently updated first. A task updated between two
 * pages moves to the front of the list, so a walk through the pages may miss or repeat it,
 * as with any list ordered by a time that changes.
 * @throws ServiceError BAD_USER_INPUT for a page size out of range or a malformed token
 */
export async function listRecent(
  db: Kysely<Database>,
  owner: string,
  request: RecentRequest,
): Promise<RecentPage> {
  const { pageSize } = request;
  if (!Number.isInteger(pageSize) || pageSize < 1 || pageSize > MAX_RECENT_PAGE_SIZE) {
    throw new ServiceError(
      'BAD_USER_INPUT',
      `pageSize must be between 1 and ${MAX_RECENT_PAGE_SIZE}.`,
    );
  }
  // The same opaque position as every other list (an instant and an id), here the last update.
  const after = request.pageToken ? decodeCursor(request.pageToken) : null;
  const id = request.id ?? null;
  if (id !== null && !isTaskId(id)) return { tasks: [], nextPageToken: null, totalSize: 0 };
  const { rows, hasNextPage, totalSize } = await listRecentTasks(db, {
    owner,
    statuses: request.statuses ?? null,
    id: id?.toLowerCase() ?? null,
    updatedSince: request.updatedSince ?? null,
    first: pageSize,
    after: after && { lastUpdatedAt: after.createdAt, id: after.id },
  });
  const tasks = rows.map((row) => toTask(row));
  const last = tasks.at(-1);
  const nextPageToken =
    hasNextPage && last ? encodeCursor({ createdAt: last.lastUpdatedAt, id: last.id }) : null;
  return { tasks, nextPageToken, totalSize };
}
