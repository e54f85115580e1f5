import type { Kysely } from 'kysely';
import type { Database, TaskRow } from '../db/types.js';
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
import { listChildPages, listTasks } from './sql/list.js';
import type { TaskStatus } from './status.js';
import { toTask } from './task.js';
import { checkId } from './validation.js';
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
  const { owner, page } = checkList(actor, request);
  return listPage(db, owner, page);
}

/** A list request as `listFor` reads it: whose tasks, and the page checked. */
function checkList(actor: Actor, request: ListRequest): { owner: string; page: PageRequest } {
  const first = request.first ?? DEFAULT_PAGE_SIZE;
  if (!Number.isInteger(first) || first < 1 || first > MAX_PAGE_SIZE) {
    throw new ServiceError('BAD_USER_INPUT', `first must be between 1 and ${MAX_PAGE_SIZE}.`);
  }
  const owner = ownerFor(actor, request.owner ?? request.filter?.owner, 'list');
  return {
    owner,
    page: {
      first,
      after: request.after,
      statuses: request.statuses,
      filter: checkFilter(request.filter),
    },
  };
}

/**
 * One page of children for each of `parentIds`, as `listFor` would list each with
 * `filter.parentId` (the request's own `parentId` is ignored), in one statement.
 * @returns the pages in the order of `parentIds`
 * @throws ServiceError as `listFor`, or BAD_USER_INPUT for a malformed parent id
 */
export async function listChildrenFor(
  db: Kysely<Database>,
  actor: Actor,
  parentIds: readonly string[],
  request: ListRequest,
): Promise<TaskPage[]> {
  const { owner, page } = checkList(actor, request);
  const ids = parentIds.map(checkId);
  const pages = await listChildPages(db, ids, {
    owner,
    statuses: page.statuses ?? null,
    filter: page.filter ?? null,
    first: page.first,
    after: page.after ? decodeCursor(page.after) : null,
  });
  return ids.map((id) => pageOf(pages.get(id) ?? { rows: [], hasNextPage: false }));
}

function pageOf({ rows, hasNextPage }: { rows: TaskRow[]; hasNextPage: boolean }): TaskPage {
  const tasks = rows.map((row) => toTask(row));
  const last = tasks.at(-1);
  return { tasks, hasNextPage, endCursor: last ? encodeCursor(last) : null };
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
  return pageOf(
    await listTasks(db, {
      owner,
      statuses: request.statuses ?? null,
      filter: request.filter ?? null,
      first: request.first,
      after: request.after ? decodeCursor(request.after) : null,
    }),
  );
}
