import { DatabaseUnavailable } from '../db/faults.js';
import type { Executor } from '../db/types.js';
import { ServiceError } from '../errors.js';
import type { TaskEvents } from './events/hub.js';
import type { Reservation } from './runner/reservations.js';
import type { PreparedStart, StoredStart } from './start.js';
import { StartCoalescer } from './start-coalescer.js';

/** This process's runner as a start sees it (`Runner.reserve`). */
export interface RunsHere {
  reserve(kind: string): Reservation | undefined;
}

/**
 * Where a single start goes once checked (`TaskService.start` → here → `StartCoalescer` →
 * `insertTask`). When this process's runner has a slot free for it and knows of no task
 * waiting for one, the task is inserted already leased to it and runs as soon as the insert
 * commits: the insert is the claim, and one commit and one NOTIFY hop fewer lie between the
 * start and the task's end. Only a task due now without a concurrency or rate limit or a
 * debounce: any other waits for a claim, which keeps the keys' limits, the priority order and
 * the owners' turns in one place (`taskhandle_claim_tasks`).
 */
export class StartsHere {
  private readonly coalescer: StartCoalescer;

  /** @param runner this process's runner, when it runs tasks too (ROLE=all) */
  constructor(
    db: Executor,
    private readonly events: TaskEvents,
    private readonly runner: RunsHere | undefined,
  ) {
    this.coalescer = new StartCoalescer(db);
  }

  /** Stores a prepared start, committed before this resolves. */
  async store(entry: PreparedStart): Promise<StoredStart> {
    const { task } = entry;
    // A debounced task is never inserted leased: it would start with its burst just begun.
    const reservation =
      task.runAt === null && task.concurrencyLimit === null && !task.rateLimit && !task.debounce
        ? this.runner?.reserve(task.kind)
        : undefined;
    // The stored row goes to this process's row cache, so that the polls and the subscription
    // that follow a start need not read it back.
    const writes = this.events.writing([task.id]);
    let stored: StoredStart;
    try {
      stored = await this.coalescer.store(
        reservation ? { ...entry, lease: reservation.lease } : entry,
      );
    } catch (err) {
      this.events.written(writes, []);
      // A refusal stored nothing; any other failure may have come after the commit.
      if (err instanceof ServiceError && !(err instanceof DatabaseUnavailable))
        reservation?.abandoned();
      else reservation?.lost(task.id);
      throw err;
    }
    this.events.written(writes, [stored.row]);
    // A debounced start that joined changed another task than the one announced: what this
    // process cached of it goes now, so a read that follows sees the join (DESIGN §17).
    if (stored.joined) this.events.committed(stored.row.id, stored.row.version);
    if (reservation) {
      if (stored.created) reservation.inserted(stored.row);
      else reservation.abandoned();
    }
    return stored;
  }
}
