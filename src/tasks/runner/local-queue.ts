import type { Logger } from 'pino';
import type { TaskRow } from '../../db/types.js';
import type { TaskEvents } from '../events/hub.js';
import type { Lease } from '../sql/leases.js';
import type { AbortCause } from './aborted.js';
import type { HeldTask } from './lease-keeper.js';

/** What the queue's tasks share: whose they are, how long a lease lasts, where to hear of them. */
export interface QueueContext {
  workerId: string;
  leaseMs: number;
  events: TaskEvents;
  log: Logger;
}

/**
 * A task claimed ahead of a free slot: leased to this process (the lease keeper renews it
 * like a running one) but not started. A newer version of its row that is no longer its
 * (a cancel, another worker's claim), or a renewal that finds it gone, drops it: it will not
 * be started.
 */
export class QueuedTask implements HeldTask {
  readonly lease: Lease;
  readonly waiting = false;
  dropped = false;
  private leaseUntil: number;
  private readonly unwatch: () => void;

  constructor(
    public row: TaskRow,
    /** When the claim was sent. */
    readonly claimedAt: number,
    private readonly context: QueueContext,
  ) {
    this.lease = { workerId: context.workerId, attempt: row.attempt };
    this.leaseUntil = claimedAt + context.leaseMs;
    this.unwatch = context.events.watch(row.id, (changed) => {
      if (!changed) return this.abort('expired');
      if (changed.version <= this.row.version) return;
      if (changed.status === 'cancelled') return this.abort('cancelled');
      const ours = changed.worker_id === this.lease.workerId && changed.attempt === row.attempt;
      if (changed.status !== 'working' || !ours) return this.abort('lease-lost');
      this.row = changed;
    });
  }

  get id(): string {
    return this.row.id;
  }

  /** When the lease runs from, for the task that starts it: the send time of the last renewal. */
  get leaseFrom(): number {
    return this.leaseUntil - this.context.leaseMs;
  }

  lapsed(now: number): boolean {
    return this.leaseUntil < now;
  }

  renewed(sentAt: number): void {
    this.leaseUntil = sentAt + this.context.leaseMs;
  }

  /** Drops the task (once): lost, cancelled or gone while it waited. */
  abort(cause: AbortCause): void {
    if (this.dropped) return;
    this.dropped = true;
    this.unwatch();
    this.context.log.debug({ taskId: this.row.id, cause }, 'dropping queued task');
  }

  /** Nothing to re-read: a queued task waits for no answer. */
  changed(): void {}

  /** Hands the task over to a running one (which watches the row itself from then on). */
  taken(): void {
    this.unwatch();
  }
}

/**
 * The tasks this process claimed ahead of its free slots, first claimed first (in the claim's
 * order), handed to handlers as slots free. graphile-worker's local queue is the model: a
 * worker that claims a batch at a time keeps its slots busy while the next claim is in
 * flight, instead of leaving them idle for a round trip per cycle.
 */
export class LocalQueue {
  private tasks: QueuedTask[] = [];

  constructor(private readonly context: QueueContext) {}

  /** Tasks queued (not dropped). */
  get length(): number {
    let n = 0;
    for (const task of this.tasks) if (!task.dropped) n++;
    return n;
  }

  /** Queues a claim's rows, in the claim's order (priority, then owners in turn or due time). */
  push(rows: readonly TaskRow[], claimedAt: number): void {
    for (const row of rows) this.tasks.push(new QueuedTask(row, claimedAt, this.context));
  }

  /** The next task to start, whose lease still holds at `now`; dropped ones are let go. */
  shift(now: number): QueuedTask | undefined {
    for (let task = this.tasks.shift(); task; task = this.tasks.shift()) {
      if (task.dropped) continue;
      if (task.lapsed(now)) {
        task.abort('lease-lost');
        continue;
      }
      task.taken();
      return task;
    }
    return undefined;
  }

  /** The queued tasks, for the lease keeper. */
  held(): Iterable<QueuedTask> {
    this.tasks = this.tasks.filter((task) => !task.dropped);
    return this.tasks;
  }

  /** Empties the queue (a stop): @returns the leases to give back */
  takeAll(): Array<{ id: string; attempt: number }> {
    const all = this.tasks.filter((task) => !task.dropped);
    this.tasks = [];
    for (const task of all) task.taken();
    return all.map((task) => ({ id: task.id, attempt: task.lease.attempt }));
  }
}
