import type { TaskRow } from '../../db/types.js';
import type { InsertLease } from '../sql/insert.js';

/**
 * A slot of this process's runner promised to one task about to be inserted already leased to
 * it: the insert is the claim (see `insertTask`), and the task runs once it commits.
 */
export interface Reservation {
  readonly lease: InsertLease;
  /** The task was stored leased (its row as the insert returned it): run it now. */
  inserted(row: TaskRow): void;
  /** Nothing was stored under the lease (a refusal, an idempotent replay, a failed write). */
  abandoned(): void;
}

/** The runner's side of its reservations: what it does when one settles. */
export interface ReservationSettler {
  /** @param sentAt when the slot was promised: the lease runs from no earlier than this */
  inserted(row: TaskRow, sentAt: number): void;
  abandoned(): void;
}

/** Hands out reservations and counts those not yet settled (each takes a slot meanwhile). */
export class Reservations {
  count = 0;

  constructor(
    private readonly lease: InsertLease,
    private readonly settler: ReservationSettler,
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
        if (close()) this.settler.inserted(row, sentAt);
      },
      abandoned: () => {
        if (close()) this.settler.abandoned();
      },
    };
  }
}
