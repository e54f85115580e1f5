import { ServiceError } from '../errors.js';
import { TASK_STATUSES, type TaskStatus } from './status.js';
import { checkId, checkLabels } from './validation.js';

/**
 * Which of an owner's tasks a list, a subscription or a bulk cancel is about (DESIGN §15).
 * Every condition given must hold; a list condition holds when any of its values does.
 */
export interface TaskFilter {
  statuses?: readonly TaskStatus[] | null | undefined;
  kinds?: readonly string[] | null | undefined;
  /** Every pair must match. */
  labels?: Readonly<Record<string, string>> | null | undefined;
  /** Inclusive. */
  createdAfter?: Date | null | undefined;
  /** Exclusive. */
  createdBefore?: Date | null | undefined;
  /** Admins only: whose tasks. Default: the caller's own. */
  owner?: string | null | undefined;
  /** The children of this task (DESIGN §16). */
  parentId?: string | null | undefined;
}

/** A filter after `checkFilter`: lists deduplicated, absent conditions null. */
export interface CheckedFilter {
  statuses: TaskStatus[] | null;
  kinds: string[] | null;
  labels: Record<string, string> | null;
  createdAfter: Date | null;
  createdBefore: Date | null;
  parentId: string | null;
}

/** Most kinds one filter may name: each is one walk of an index, merged. */
export const MAX_FILTER_KINDS = 20;

function refuse(message: string): never {
  throw new ServiceError('BAD_USER_INPUT', message);
}

function checkDate(value: unknown, what: string): Date | null {
  if (value === undefined || value === null) return null;
  if (!(value instanceof Date) || Number.isNaN(value.getTime()))
    refuse(`filter.${what} must be a date and time (ISO 8601).`);
  return value;
}

/**
 * The filter's conditions, checked: known statuses, at most MAX_FILTER_KINDS kinds, labels
 * by the rules of a task's own. Says nothing of `owner` (the service decides who may name one).
 * @throws ServiceError BAD_USER_INPUT naming the condition at fault
 */
export function checkFilter(filter: TaskFilter | null | undefined): CheckedFilter {
  const f = filter ?? {};
  let statuses: TaskStatus[] | null = null;
  if (f.statuses != null) {
    if (!Array.isArray(f.statuses)) refuse('filter.status must be a list of statuses.');
    for (const status of f.statuses)
      if (!TASK_STATUSES.includes(status))
        refuse(`Unknown status ${JSON.stringify(status)} in filter.status.`);
    statuses = f.statuses.length ? [...new Set(f.statuses)] : null;
  }
  let kinds: string[] | null = null;
  if (f.kinds != null) {
    if (!Array.isArray(f.kinds)) refuse('filter.kind must be a list of kind names.');
    for (const kind of f.kinds)
      if (typeof kind !== 'string' || kind.length === 0 || kind.length > 255)
        refuse('filter.kind must be kind names of 1 to 255 characters.');
    kinds = f.kinds.length ? [...new Set(f.kinds)] : null;
    if (kinds && kinds.length > MAX_FILTER_KINDS)
      refuse(`filter.kind may name at most ${MAX_FILTER_KINDS} kinds.`);
  }
  const labels = checkLabels(f.labels, 'filter.labels');
  return {
    statuses,
    kinds,
    labels: Object.keys(labels).length ? labels : null,
    createdAfter: checkDate(f.createdAfter, 'createdAfter'),
    createdBefore: checkDate(f.createdBefore, 'createdBefore'),
    parentId: f.parentId == null ? null : checkId(f.parentId),
  };
}

/** Whether the filter names no condition at all (the owner is no condition). */
export function isEmptyFilter(filter: CheckedFilter): boolean {
  return (
    filter.statuses === null &&
    filter.kinds === null &&
    filter.labels === null &&
    filter.createdAfter === null &&
    filter.createdBefore === null &&
    filter.parentId === null
  );
}

/** What a task must show for `matches`: the Task's fields or a row's, mapped by the caller. */
export interface Filterable {
  status: TaskStatus;
  kind: string;
  labels: Readonly<Record<string, string>>;
  createdAt: Date;
  parentId: string | null;
}

/** A stored row as `matches` reads it. */
export function filterable(row: {
  status: TaskStatus;
  kind: string;
  labels: Record<string, string> | null;
  created_at: Date;
  parent_id: string | null;
}): Filterable {
  return {
    status: row.status,
    kind: row.kind,
    labels: row.labels ?? {},
    createdAt: row.created_at,
    parentId: row.parent_id ?? null,
  };
}

/**
 * Whether a task meets the filter, in process: the same rule the list's SQL states, for
 * subscriptions that judge each change as it arrives.
 */
export function matches(task: Filterable, filter: CheckedFilter): boolean {
  if (filter.statuses && !filter.statuses.includes(task.status)) return false;
  if (filter.kinds && !filter.kinds.includes(task.kind)) return false;
  if (filter.parentId && task.parentId !== filter.parentId) return false;
  if (filter.labels)
    for (const [key, value] of Object.entries(filter.labels))
      if (task.labels[key] !== value) return false;
  const at = task.createdAt.getTime();
  if (filter.createdAfter && at < filter.createdAfter.getTime()) return false;
  if (filter.createdBefore && at >= filter.createdBefore.getTime()) return false;
  return true;
}
