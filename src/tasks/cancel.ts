import type { Executor } from '../db/types.js';
import { notFound, ServiceError } from '../errors.js';
import type { ListPosition } from './cursor.js';
import type { TaskEvents } from './events/hub.js';
import { checkFilter, isEmptyFilter, type TaskFilter } from './filter.js';
import type { Actor } from './requests.js';
import { cancelTask } from './sql/cancel.js';
import { cancelBatch, countMatching } from './sql/cancel-many.js';
import { findVisibleTask } from './sql/find.js';
import { cancelDescendants } from './steps/cascade.js';
import { type Task, toTask } from './task.js';
import { checkId } from './validation.js';
import { ownerFor } from './visibility.js';

/**
 * Cancels an active task the actor may see (`owner` null: an admin's, any), and its
 * non-terminal descendants (DESIGN §16); a cancelled one is returned unchanged, `changed` false.
 * @throws ServiceError TASK_TERMINAL for a task that already finished otherwise
 */
export async function cancelOne(
  db: Executor,
  events: TaskEvents,
  owner: string | null,
  id: string,
): Promise<{ task: Task; changed: boolean }> {
  const taskId = checkId(id);
  const changed = await cancelTask(db, taskId, owner);
  if (changed) {
    events.committed(changed.id, changed.version);
    if (changed.children_count > 0) await cancelDescendants(db, events, [changed.id]);
    return { task: toTask(changed), changed: true };
  }
  // Nothing changed: the task is unknown, gone, or already final — and final never changes back.
  const row = await findVisibleTask(db, taskId, owner);
  if (!row) throw notFound();
  if (row.status === 'cancelled') {
    // Again, for descendants a first cancel may have left (its cascade cut short by a fault).
    if (row.children_count > 0) await cancelDescendants(db, events, [row.id]);
    return { task: toTask(row), changed: false };
  }
  throw new ServiceError('TASK_TERMINAL', `The task is already ${row.status}.`);
}

/** Rows one bulk-cancel statement may lock at most. */
export const CANCEL_BATCH_SIZE = 250;

/** What a bulk cancel reports, and audits: the owner and filter it ran with, and its counts. */
export interface CancelMatchingOutcome {
  matched: number;
  cancelled: number;
  owner: string;
  filter: TaskFilter;
}

/**
 * Cancels every active task of the actor (admins: of `filter.owner`) that meets the filter,
 * in batches of CANCEL_BATCH_SIZE, announcing each change on the event stream.
 * @throws ServiceError BAD_USER_INPUT for a filter with no condition
 */
export async function cancelMatching(
  db: Executor,
  events: TaskEvents,
  actor: Actor,
  filter: TaskFilter,
): Promise<CancelMatchingOutcome> {
  const owner = ownerFor(actor, filter?.owner, 'cancel');
  const checked = checkFilter(filter);
  if (isEmptyFilter(checked))
    throw new ServiceError(
      'BAD_USER_INPUT',
      'The filter names no condition; to cancel every task, name the statuses.',
    );
  const matched = await countMatching(db, owner, checked);
  let cancelled = 0;
  let after: ListPosition | null = null;
  do {
    const batch = await cancelBatch(db, owner, checked, after, CANCEL_BATCH_SIZE);
    for (const { id, version } of batch.cancelled) events.committed(id, version);
    cancelled += batch.cancelled.length;
    const parents = batch.cancelled.filter((t) => t.children_count > 0).map((t) => t.id);
    if (parents.length > 0) await cancelDescendants(db, events, parents);
    after = batch.next;
  } while (after);
  return { matched, cancelled, owner, filter: checked };
}
