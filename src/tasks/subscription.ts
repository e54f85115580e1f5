import type { Kysely } from 'kysely';
import type { Database, TaskRow } from '../db/types.js';
import { notFound } from './errors.js';
import type { TaskEvents } from './events.js';
import { isTerminal, type TaskStatus } from './status.js';
import { findTask } from './store.js';
import { toTask, type Task } from './task.js';

/**
 * Follows one task for one subscriber. Memory per subscriber is bounded: only the newest
 * undelivered row is kept (a slow consumer skips intermediate versions, never the final one,
 * since the final version is always the newest). Versions only increase.
 */
export async function subscribeToTask(
  events: TaskEvents,
  db: Kysely<Database>,
  id: string,
  owner: string | null,
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
    current = await findTask(db, id, owner);
  } catch (err) {
    unwatch();
    throw err;
  }
  if (!current) {
    unwatch();
    throw notFound();
  }
  offer(current);
  expiry = setTimeout(end, Math.min(2 ** 31 - 1, current.expires_at.getTime() - Date.now()));

  const iterator: AsyncIterableIterator<Task> = {
    async next(): Promise<IteratorResult<Task>> {
      while (!pending && !ended) await new Promise<void>((resolve) => (wake = resolve));
      wake = undefined;
      const row = pending;
      pending = undefined;
      if (!row) return { done: true, value: undefined };
      if (row.expires_at.getTime() <= Date.now()) {
        end();
        return { done: true, value: undefined };
      }
      lastVersion = row.version;
      if (isTerminal(row.status as TaskStatus)) end();
      return { done: false, value: toTask(row) };
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
