import type { TaskRow } from '../../db/types.js';
import { notFound } from '../../errors.js';
import { isTerminal } from '../status.js';
import { type Task, toTask, visible } from '../task.js';
import type { TaskEvents } from './hub.js';

/**
 * One Task per row read: every local subscriber of a task gets the same object for the same
 * change (the GraphQL face executes each event once per viewer, keyed by this object). A
 * conversion is reused for a second at most: `pollIntervalMs` grows while a task waits.
 */
const converted = new WeakMap<TaskRow, { task: Task; at: number }>();
function taskOf(row: TaskRow): Task {
  const now = Date.now();
  let entry = converted.get(row);
  if (!entry || now - entry.at > 1_000) {
    entry = { task: toTask(row, now), at: now };
    converted.set(row, entry);
  }
  return entry.task;
}

/**
 * Follows one task for one subscriber. Memory per subscriber is bounded: only the newest
 * undelivered row is kept (a slow consumer skips intermediate versions, never the final one,
 * since the final version is always the newest). Versions only increase. The stream ends at
 * the final state, when the task expires or is deleted, or at `until` (epoch ms: when the
 * subscriber's credentials expire).
 */
export async function subscribeToTask(
  events: TaskEvents,
  id: string,
  owner: string | null,
  until?: number,
): Promise<AsyncIterableIterator<Task>> {
  let pending: TaskRow | undefined;
  let lastVersion = 0;
  let ended = false;
  let wake: (() => void) | undefined;
  let expiry: NodeJS.Timeout | undefined;

  const end = () => {
    if (ended) return;
    ended = true;
    unwatch();
    clearTimeout(expiry);
    wake?.();
  };
  const offer = (row: TaskRow | undefined) => {
    if (ended) return;
    if (!row || row.expires_at.getTime() <= Date.now()) return end();
    if (row.version <= Math.max(lastVersion, pending?.version ?? 0)) return;
    pending = row;
    wake?.();
  };

  // Watch first, then read: a change between the two is not lost.
  const unwatch = events.watch(id, offer);
  let current: TaskRow | undefined;
  try {
    current = await events.read(id);
  } catch (err) {
    unwatch();
    throw err;
  }
  if (!visible(current, owner)) {
    unwatch();
    throw notFound();
  }
  offer(current);
  const endAt = Math.min(current.expires_at.getTime(), until ?? Infinity);
  expiry = setTimeout(end, Math.max(0, Math.min(2 ** 31 - 1, endAt - Date.now())));

  const iterator: AsyncIterableIterator<Task> = {
    async next(): Promise<IteratorResult<Task>> {
      while (!pending && !ended) await new Promise<void>((resolve) => (wake = resolve));
      wake = undefined;
      const row = pending;
      pending = undefined;
      if (!row) return { done: true, value: undefined };
      if (row.expires_at.getTime() <= Date.now() || (until !== undefined && until <= Date.now())) {
        end();
        return { done: true, value: undefined };
      }
      lastVersion = row.version;
      if (isTerminal(row.status)) end();
      return { done: false, value: taskOf(row) };
    },
    async return(): Promise<IteratorResult<Task>> {
      end();
      pending = undefined;
      return { done: true, value: undefined };
    },
    [Symbol.asyncIterator]() {
      return iterator;
    },
  };
  return iterator;
}
