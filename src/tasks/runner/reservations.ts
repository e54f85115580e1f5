import { setTimeout as sleep } from 'node:timers/promises';
import type { Executor, TaskRow } from '../../db/types.js';
import type { InsertLease } from '../sql/insert.js';
import { releaseLeases } from '../sql/leases.js';

/**
 * A slot of this process's runner promised to one task about to be inserted already leased to
 * it: the insert is the claim (see `insertTask`), and the task runs once it commits.
 */
export interface Reservation {
  readonly lease: InsertLease;
  /** The task was stored leased (its row as the insert returned it): run it now. */
  inserted(row: TaskRow): void;
  /** Nothing was stored under the lease (a refusal, an idempotent replay). */
  abandoned(): void;
  /**
   * The write failed without a refusal: it may have committed, its answer lost, and task `id`
   * be stored leased to this process.
   */
  lost(id: string): void;
}

/**
 * The runner as its reservations see it: what becomes of the slot once the insert is settled.
 * `Runner` implements it; each method is called at most once per reservation.
 */
export interface ReservedSlots {
  /** Stored leased: run it. @param sentAt when the slot was promised (the lease runs from it) */
  runInserted(row: TaskRow, sentAt: number): void;
  /** Nothing was stored: the slot is free again. */
  slotUnused(): void;
  /** The answer was lost: the task may be stored leased here, and is given back. */
  giveBackLost(id: string): void;
}

/** Hands out reservations and counts those not yet settled (each takes a slot meanwhile). */
export class Reservations {
  count = 0;

  constructor(
    private readonly lease: InsertLease,
    private readonly slots: ReservedSlots,
  ) {}

  take(): Reservation {
    this.count++;
    const sentAt = Date.now();
    let open = true;
    const close = () => {
      if (!open) return false;
      open = false;
      this.count--;
      return true;
    };
    return {
      lease: this.lease,
      inserted: (row) => {
        if (close()) this.slots.runInserted(row, sentAt);
      },
      abandoned: () => {
        if (close()) this.slots.slotUnused();
      },
      lost: (id) => {
        if (close()) this.slots.giveBackLost(id);
      },
    };
  }
}

/** Between two tries of `giveBack` while the database is unavailable. */
const GIVE_BACK_RETRY_MS = 1_000;

/**
 * Gives back task `id`, which may be stored leased to this process (a reservation `lost`): its
 * lease goes, the attempt uncounted, and another claim takes it at once rather than after the
 * lease lapses; a no-op if it was not stored. The answer was lost to a fault of the database or
 * of the way to it, so a failed try is tried again, for as long as the lease would hold.
 */
export async function giveBack(
  db: Executor,
  { workerId, leaseMs }: InsertLease,
  id: string,
  stopping: () => boolean,
): Promise<void> {
  for (const until = Date.now() + leaseMs; !stopping() && Date.now() < until; ) {
    try {
      await releaseLeases(db, workerId, [{ id, attempt: 1 }]);
      return;
    } catch {
      await sleep(GIVE_BACK_RETRY_MS);
    }
  }
}
