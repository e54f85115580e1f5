import type { TaskRow } from '../../db/types.js';
import { Deadlines } from '../../deadlines.js';
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
 * When followers end: the subscribers of one task (or of tokens of one instant) share a timer.
 */
const endings = new Deadlines<TaskFollower>((follower) => follower.end());

const DONE: IteratorResult<Task> = Object.freeze({ done: true, value: undefined });

/**
 * A stream whose next step can be had without a promise: `pull(take)` is `next()` with `take`
 * in place of the promise's resolution, called at once when a step is ready, else when one
 * comes. One call, one step. A consumer that hands each step on at once (the GraphQL face's
 * WebSocket frames) pays no promise per subscriber per change that way.
 */
export interface Pullable<T> {
  pull(take: (step: IteratorResult<T>) => void): void;
}

/**
 * One subscriber's stream of one task (see `subscribeToTask`). A class, not closures: what
 * ten thousand subscribers of a task hold is ten thousand of these and their hub entries.
 */
class TaskFollower implements AsyncIterableIterator<Task>, Pullable<Task> {
  /** The newest undelivered row. */
  private pending: TaskRow | undefined;
  private lastVersion = 0;
  private ended = false;
  /** The `next()` or `pull()` waiting for a row or the end. */
  private waiting: ((step: IteratorResult<Task>) => void) | undefined;
  /** The hub's callback: this follower's `offer`, bound once. */
  readonly watcher: (row: TaskRow | undefined) => void;

  constructor(
    private readonly events: TaskEvents,
    private readonly id: string,
    private readonly until: number | undefined,
  ) {
    this.watcher = this.offer.bind(this);
  }

  /** A row read after a change (`undefined`: the task is gone). */
  offer(row: TaskRow | undefined): void {
    if (this.ended) return;
    if (!row || row.expires_at.getTime() <= Date.now()) {
      this.end();
      return;
    }
    if (row.version <= Math.max(this.lastVersion, this.pending?.version ?? 0)) return;
    this.pending = row;
    this.wake();
  }

  /** Ends the stream once what is pending has been taken. */
  end(): void {
    if (this.ended) return;
    this.ended = true;
    this.events.unwatch(this.id, this.watcher);
    endings.delete(this);
    this.wake();
  }

  /** Ends at `epochMs` (the task's expiry or the subscriber's `until`, whichever is first). */
  endAt(epochMs: number): void {
    if (!this.ended) endings.add(this, epochMs);
  }

  next(): Promise<IteratorResult<Task>> {
    if (this.pending || this.ended) return Promise.resolve(this.take());
    return new Promise((resolve) => (this.waiting = resolve));
  }

  pull(take: (step: IteratorResult<Task>) => void): void {
    if (this.pending || this.ended) take(this.take());
    else this.waiting = take;
  }

  return(): Promise<IteratorResult<Task>> {
    this.end();
    this.pending = undefined;
    return Promise.resolve(DONE);
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  private wake(): void {
    const waiting = this.waiting;
    if (!waiting) return;
    this.waiting = undefined;
    waiting(this.take());
  }

  private take(): IteratorResult<Task> {
    const row = this.pending;
    this.pending = undefined;
    if (!row) return DONE;
    const now = Date.now();
    if (row.expires_at.getTime() <= now || (this.until !== undefined && this.until <= now)) {
      this.end();
      return DONE;
    }
    this.lastVersion = row.version;
    if (isTerminal(row.status)) this.end();
    return { done: false, value: taskOf(row) };
  }
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
): Promise<AsyncIterableIterator<Task> & Pullable<Task>> {
  const follower = new TaskFollower(events, id, until);
  // Watch first, then read: a change between the two is not lost.
  events.watch(id, follower.watcher);
  let current: TaskRow | undefined;
  try {
    current = await events.read(id);
  } catch (err) {
    events.unwatch(id, follower.watcher);
    throw err;
  }
  if (!visible(current, owner)) {
    events.unwatch(id, follower.watcher);
    throw notFound();
  }
  follower.offer(current);
  follower.endAt(Math.min(current.expires_at.getTime(), until ?? Infinity));
  return follower;
}
