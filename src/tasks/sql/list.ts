import { type RawBuilder, sql } from 'kysely';
import { prepared } from '../../db/pg-pool.js';
import type { Executor, TaskRow } from '../../db/types.js';
import type { CheckedFilter } from '../filter.js';
import { TASK_STATUSES, type TaskStatus } from '../status.js';
import { json } from './common.js';

export interface ListOptions {
  owner: string;
  statuses?: readonly TaskStatus[] | null;
  /** DESIGN §15's conditions; `statuses` above, when also given, must hold as well. */
  filter?: CheckedFilter | null;
  /** Rows to return; one more is read to tell whether another page exists. */
  first: number;
  after?: { createdAt: Date; id: string } | null;
}

export const NO_FILTER: CheckedFilter = {
  statuses: null,
  kinds: null,
  labels: null,
  createdAfter: null,
  createdBefore: null,
  parentId: null,
};

/** The conditions on `t` every plan checks (the walk's own condition is added by the caller). */
export function conditions(options: ListOptions, filter: CheckedFilter): RawBuilder<unknown> {
  const parts: RawBuilder<unknown>[] = [sql`t.owner = ${options.owner}`, sql`t.expires_at > now()`];
  if (options.statuses?.length) parts.push(sql`t.status = any(${[...options.statuses]}::text[])`);
  if (filter.statuses) parts.push(sql`t.status = any(${filter.statuses}::text[])`);
  if (filter.kinds) parts.push(sql`t.kind = any(${filter.kinds}::text[])`);
  if (filter.parentId) parts.push(sql`t.parent_id = ${filter.parentId}::uuid`);
  if (filter.labels) parts.push(sql`t.labels @> ${json(filter.labels)}`);
  if (filter.createdAfter)
    parts.push(sql`t.created_at >= ${filter.createdAfter.toISOString()}::timestamptz`);
  if (filter.createdBefore)
    parts.push(sql`t.created_at < ${filter.createdBefore.toISOString()}::timestamptz`);
  if (options.after) {
    const { createdAt, id } = options.after;
    parts.push(sql`(t.created_at, t.id) < (${createdAt.toISOString()}::timestamptz, ${id}::uuid)`);
  }
  return sql.join(parts, sql` and `);
}

/**
 * Newest first, keyset-paginated on (created_at, id) so pages never overlap. Whatever the
 * filter, the page is read by walking one ordered index newest first and stopping after it
 * (migrations/0005_labels.sql): a label filter walks the first label's rows in task_labels;
 * a kind filter walks each kind's part of tasks_owner_kind_created, a status filter each
 * status's part of tasks_owner_status_created, merged in order (Merge Append); a page with
 * neither walks every status's part (an index of the owner's tasks alone would be paid by every
 * start and every outcome, migration 0014). The other conditions are checked on the rows
 * walked, so a page costs its size divided by the share of walked rows they keep, not the
 * owner's total.
 */
export async function listTasks(
  db: Executor,
  options: ListOptions,
): Promise<{ rows: TaskRow[]; hasNextPage: boolean }> {
  const rows = (await listQuery(options).execute(db)).rows;
  return { rows: rows.slice(0, options.first), hasNextPage: rows.length > options.first };
}

/** The statement `listTasks` runs (one more row than the page), for EXPLAIN to read. */
export function listQuery(options: ListOptions): RawBuilder<TaskRow> {
  const filter = options.filter ?? NO_FILTER;
  const limit = options.first + 1;
  const where = conditions(options, filter);
  const order = sql`order by t.created_at desc, t.id desc`;
  let query: RawBuilder<TaskRow>;
  const label = filter.labels ? Object.entries(filter.labels)[0] : undefined;
  const statuses = filter.statuses ?? (options.statuses?.length ? [...options.statuses] : null);
  if (filter.parentId) {
    // A parent's children: its part of tasks_children, newest first (migration 0008).
    query = sql<TaskRow>`select t.* from tasks t where ${where} ${order} limit ${limit}::int`;
  } else if (label) {
    const [key, value] = label;
    const after = options.after
      ? sql`and (l.created_at, l.task_id) < (${options.after.createdAt.toISOString()}::timestamptz, ${options.after.id}::uuid)`
      : sql``;
    // `offset 0` keeps the task lookup a per-row probe under the label walk: joined freely,
    // a planner that expects many matches may hash-join them all and sort (PGlite does).
    query = sql<TaskRow>`
      select t.* from task_labels l
      cross join lateral (select * from tasks t where t.id = l.task_id and ${where} offset 0) t
      where l.owner = ${options.owner} and l.key = ${key} and l.value = ${value} ${after}
      order by l.created_at desc, l.task_id desc
      limit ${limit}::int`;
  } else {
    const walks: RawBuilder<unknown>[] = filter.kinds
      ? filter.kinds.map((kind) => sql`t.kind = ${kind}`)
      : (statuses ?? TASK_STATUSES).map((status) => sql`t.status = ${status}`);
    if (walks.length === 1) {
      query = sql<TaskRow>`
        select t.* from tasks t where ${where} and ${walks[0]} ${order} limit ${limit}::int`;
    } else {
      const branches = walks.map(
        (walk) =>
          sql`(select t.* from tasks t where ${where} and ${walk} ${order} limit ${limit}::int)`,
      );
      // The page with no filter has two shapes (with and without a position): prepared, its
      // five walks are planned once per connection, not at every page.
      const unfiltered = !filter.kinds && !statuses;
      query = sql<TaskRow>`${unfiltered ? prepared : sql``}
        select t.* from (${sql.join(branches, sql` union all `)}) t
        ${order} limit ${limit}::int`;
    }
  }
  return query;
}

/**
 * One page of children for each of `parentIds` in one statement (a page of tasks each asking
 * for its children): per parent, its part of tasks_children walked newest first, as
 * `listQuery` walks one parent's. `options.filter.parentId` is ignored.
 * @returns each parent's rows and whether it has another page, by parent id
 */
export async function listChildPages(
  db: Executor,
  parentIds: readonly string[],
  options: ListOptions,
): Promise<Map<string, { rows: TaskRow[]; hasNextPage: boolean }>> {
  const pages = new Map<string, { rows: TaskRow[]; hasNextPage: boolean }>(
    parentIds.map((id) => [id, { rows: [], hasNextPage: false }]),
  );
  if (parentIds.length === 0) return pages;
  const where = conditions(options, { ...(options.filter ?? NO_FILTER), parentId: null });
  const { rows } = await sql<TaskRow>`
    select c.* from unnest(${[...new Set(parentIds)]}::uuid[]) with ordinality as p(id, n)
    cross join lateral (
      select t.* from tasks t where t.parent_id = p.id and ${where}
      order by t.created_at desc, t.id desc limit ${options.first + 1}::int
    ) c
    order by p.n, c.created_at desc, c.id desc`.execute(db);
  for (const row of rows) {
    const page = pages.get(row.parent_id ?? '');
    if (!page) continue;
    if (page.rows.length < options.first) page.rows.push(row);
    else page.hasNextPage = true;
  }
  return pages;
}
