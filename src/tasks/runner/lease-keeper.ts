import { setTimeout as sleep } from 'node:timers/promises';
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { Database, TaskRow } from '../../db/types.js';
import { coerceError } from '../../errors.js';
import { findStoredTask } from '../sql/find.js';
import { cancelledAmong, type Lease, renewLeases } from '../sql/leases.js';

/** A task whose lease this process keeps: running, waiting for input, or queued to start. */
export interface HeldTask {
  readonly id: string;
  readonly lease: Lease;
  /** Waits for its owner's input. */
  readonly waiting: boolean;
  /** True once the lease's local deadline passed at `now` without a renewal. */
  lapsed(now: number): boolean;
  /** The lease was renewed by a statement sent at `sentAt`. */
  renewed(sentAt: number): void;
  abort(cause: 'lease-lost' | 'cancelled'): void;
  /** The row as re-read (an answer whose notification was missed). */
  changed(row: TaskRow | undefined): void;
}

export interface LeaseKeeperOptions {
  db: Kysely<Database>;
  log: Logger;
  workerId: string;
  leaseMs: number;
  /** The tasks this process holds: running, waiting for input, or queued to start. */
  held(): Iterable<HeldTask>;
}

/**
 * Keeps the leases of the tasks this process holds: a heartbeat every third of the lease
 * renews them all in one statement. Past its local deadline without a renewal (the database
 * is unreachable, a renewal hangs, the process was paused) a task may already be another
 * worker's, so its handler is aborted rather than left running twice at once.
 */
export class LeaseKeeper {
  private timer: NodeJS.Timeout | undefined;
  private renewing: Promise<void> | undefined;

  constructor(private readonly options: LeaseKeeperOptions) {}

  start(): void {
    this.timer = setInterval(() => this.heartbeat(), Math.max(50, this.options.leaseMs / 3));
  }

  /** Stops the heartbeat and waits (a second at most) for a renewal in flight. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    await Promise.race([this.renewing, sleep(1_000)]);
  }

  private heartbeat(): void {
    const startedAt = Date.now();
    const held = [...this.options.held()];
    for (const task of held) if (task.lapsed(startedAt)) task.abort('lease-lost');
    if (this.renewing || held.length === 0) return;
    this.renewing = this.renew(held, startedAt).finally(() => (this.renewing = undefined));
  }

  private async renew(held: HeldTask[], startedAt: number): Promise<void> {
    const { db, workerId, leaseMs, log } = this.options;
    try {
      const kept = await renewLeases(
        db,
        workerId,
        held.map((task) => ({ id: task.id, attempt: task.lease.attempt })),
        leaseMs,
      );
      const lost: HeldTask[] = [];
      for (const task of held) {
        const status = kept.get(task.id);
        if (status === undefined) {
          lost.push(task);
          continue;
        }
        // Locked by another statement as the renewal came: the next heartbeat renews it (and,
        // should none manage to before its deadline, the task stops as for any lapsed lease).
        if (status === 'busy') continue;
        task.renewed(startedAt);
        // Answered, but the notification never came: read the answer rather than wait forever.
        if (task.waiting && status === 'working') {
          findStoredTask(db, task.id).then(
            (row) => task.changed(row),
            (err: unknown) =>
              log.warn(
                { err: coerceError(err), taskId: task.id },
                'could not re-read an answered task',
              ),
          );
        }
      }
      if (lost.length > 0) await this.stopLost(lost);
    } catch (err) {
      log.warn({ err: coerceError(err) }, 'lease renewal failed');
      // Past the lease another worker may own the task: stop rather than run twice at once.
      const now = Date.now();
      for (const task of held) if (task.lapsed(now)) task.abort('lease-lost');
    }
  }

  /**
   * Stops tasks a renewal did not find held: lost, or cancelled or finished without this
   * process hearing of it. A cancel whose notification is still on its way is told as one.
   */
  private async stopLost(lost: HeldTask[]): Promise<void> {
    const cancelled = await cancelledAmong(
      this.options.db,
      lost.map((task) => task.id),
    ).catch(() => new Set<string>());
    for (const task of lost) task.abort(cancelled.has(task.id) ? 'cancelled' : 'lease-lost');
  }
}
