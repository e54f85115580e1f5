import type { Logger } from 'pino';
import type { TaskRow } from '../../db/types.js';
import { coerceError } from '../../errors.js';
import { type CheckedFilter, filterable, matches } from '../filter.js';
import { isTerminal, type TaskStatus } from '../status.js';
import { type Task, toTask } from '../task.js';
import type { TaskEvents } from './hub.js';

const MAX_FINALS = 10_000;

export interface OwnerFeedOptions {
  /** Whose tasks to follow. */
  owner: string;
  /** Only changes that leave a task in one of these statuses; null or empty: every change. */
  statuses?: readonly TaskStatus[] | null | undefined;
  /** DESIGN §15: only changes that leave a task meeting this filter; judged on the row read. */
  filter?: CheckedFilter | null | undefined;
  /** Epoch ms at which the stream ends (the subscriber's credentials expire). */
  until?: number | undefined;
}

/**
 * Every change of one principal's tasks, for one subscriber. Each announced change is read
 * through the hub's row cache (one read per change per process, shared by every subscriber),
 * so a task's owner is checked against the row itself, never the notification. Per task the
 * versions only increase; while the consumer is slow only the newest undelivered row of each
 * task is kept, so memory is bounded by the owner's changing tasks and a task's final state is
 * never skipped. After the listener reconnects, the non-final tasks already seen are re-read.
 * There is no initial state: read the list first (after subscribing) for that.
 */
export function subscribeToOwner(
  events: TaskEvents,
  options: OwnerFeedOptions,
  log: Logger,
): AsyncIterableIterator<Task> {
  const { owner, until } = options;
  const statuses = options.statuses?.length ? new Set(options.statuses) : null;
  const filter = options.filter ?? null;
  /** Highest version delivered or queued, per task not yet final. */
  const versions = new Map<string, number>();
  /** Tasks seen final, so that a slower read of an older version cannot follow; bounded. */
  const finals = new Set<string>();
  const pending = new Map<string, TaskRow>();
  let ended = false;
  let wake: (() => void) | undefined;

  const offer = (row: TaskRow | undefined) => {
    if (ended || !row || row.owner !== owner) return;
    if (row.expires_at.getTime() <= Date.now()) return;
    if (finals.has(row.id) || row.version <= (versions.get(row.id) ?? 0)) return;
    if (isTerminal(row.status)) {
      versions.delete(row.id);
      finals.add(row.id);
      if (finals.size > MAX_FINALS) finals.delete(finals.values().next().value as string);
    } else versions.set(row.id, row.version);
    if (statuses && !statuses.has(row.status)) return;
    if (filter && !matches(filterable(row), filter)) return;
    pending.delete(row.id); // re-queued at the end: arrival order across tasks
    pending.set(row.id, row);
    wake?.();
  };
  const read = (id: string) => {
    events.read(id).then(offer, (err: unknown) => {
      log.warn({ err: coerceError(err), taskId: id }, 'could not read a changed task');
    });
  };

  const stopChanges = events.onChange((id, version) => {
    if (!finals.has(id) && version > (versions.get(id) ?? 0)) read(id);
  });
  const stopReconnects = events.onReconnect(() => {
    for (const id of versions.keys()) read(id);
  });
  const end = () => {
    if (ended) return;
    ended = true;
    stopChanges();
    stopReconnects();
    clearTimeout(expiry);
    pending.clear();
    wake?.();
  };
  const expiry =
    until === undefined
      ? undefined
      : setTimeout(end, Math.max(0, Math.min(2 ** 31 - 1, until - Date.now())));

  const iterator: AsyncIterableIterator<Task> = {
    async next(): Promise<IteratorResult<Task>> {
      while (pending.size === 0 && !ended) await new Promise<void>((r) => (wake = r));
      wake = undefined;
      if (ended || (until !== undefined && until <= Date.now())) {
        end();
        return { done: true, value: undefined };
      }
      const [id, row] = pending.entries().next().value as [string, TaskRow];
      pending.delete(id);
      return { done: false, value: toTask(row) };
    },
    async return(): Promise<IteratorResult<Task>> {
      end();
      return { done: true, value: undefined };
    },
    [Symbol.asyncIterator]() {
      return iterator;
    },
  };
  return iterator;
}
