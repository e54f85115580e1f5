import type { Kysely } from 'kysely';
import type { Database, TaskRow } from '../../db/types.js';
import type { RowVersion, TaskEvents } from '../events/hub.js';
import { jsonText } from '../sql/common.js';
import type { Lease } from '../sql/leases.js';
import { type Outcome, recordOutcomes, type WrittenOutcome } from '../sql/outcomes.js';
import type { TaskFailure } from '../status.js';

/** Most outcomes written by one statement. */
const MAX_BATCH = 256;

interface Pending {
  outcome: Outcome;
  resolve(row: WrittenOutcome | undefined): void;
  reject(err: unknown): void;
}

/**
 * The runner's outcomes (completions, failures, retries), batched without a timer: those that
 * arrive while the code running now finishes (handlers started together, returning in one
 * cascade of promise callbacks) go out together right after it, and those that arrive while a
 * statement is in flight go together in the next one. No added delay at low load; at high
 * load, one commit for many tasks (see `recordOutcomes`). The rows written go to this
 * process's watchers at once (`TaskEvents.written`), before their NOTIFY comes back; a task
 * this process neither watches nor keeps comes back as its summary (`WrittenOutcome`).
 */
export class OutcomeWriter {
  private queue: Pending[] = [];
  private writing = false;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly events?: TaskEvents,
  ) {}

  /**
   * @returns the completed row; `undefined` when the lease no longer holds (nothing changed)
   * @throws TypeError (as a rejection) for a result JSON cannot express; nothing is written
   */
  complete(id: string, lease: Lease, result: unknown): Promise<WrittenOutcome | undefined> {
    let text: string | null;
    try {
      text = jsonText(result ?? null);
    } catch (err) {
      return Promise.reject(err);
    }
    return this.add({ id, lease, ending: 'complete', result: text });
  }

  /** Fails the task for good. @returns the row, as for {@link complete} */
  fail(id: string, lease: Lease, failure: TaskFailure): Promise<WrittenOutcome | undefined> {
    return this.add({ id, lease, ending: 'fail', failure });
  }

  /**
   * Ends a failed attempt: retried `delayMs` from now while attempts and time remain, else
   * failed (as `retryOrFail`). @returns the row, as for {@link complete}
   */
  retryOrFail(
    id: string,
    lease: Lease,
    failure: TaskFailure,
    delayMs: number,
  ): Promise<WrittenOutcome | undefined> {
    return this.add({ id, lease, ending: 'retry', failure, delayMs });
  }

  private add(outcome: Outcome): Promise<WrittenOutcome | undefined> {
    return new Promise((resolve, reject) => {
      this.queue.push({ outcome, resolve, reject });
      if (this.writing) return;
      // Let the code running now finish: tasks that finish on the same I/O event (a batch claimed
      // together, quick handlers) go out in one statement, not one alone and the rest after. Not
      // a whole turn of the event loop, which would also wait for every other callback ready in it.
      this.writing = true;
      process.nextTick(() => void this.flush());
    });
  }

  private async flush(): Promise<void> {
    while (this.queue.length > 0) {
      const batch = this.queue.splice(0, MAX_BATCH);
      try {
        const written = await writtenHere(
          this.events,
          batch.map((p) => p.outcome.id),
          // Whole rows only for the tasks this process watches or keeps (see `wantsRow`); the
          // task's own handler stopped watching it when it returned.
          () =>
            recordOutcomes(
              this.db,
              batch.map((p) => p.outcome),
              (id) => this.events?.wantsRow(id) ?? true,
            ),
        );
        const rows = new Map(written.map((row) => [row.id, row]));
        for (const pending of batch) pending.resolve(rows.get(pending.outcome.id));
      } catch (err) {
        for (const pending of batch) pending.reject(err);
      }
    }
    this.writing = false;
  }
}

/**
 * Runs `write`, a statement that may change tasks `ids` and returns the rows it changed, and
 * hands those rows to this process's watchers (see `TaskEvents.writing` and `written`).
 */
export async function writtenHere<Row extends TaskRow | RowVersion>(
  events: TaskEvents | undefined,
  ids: readonly string[],
  write: () => Promise<Row[]>,
): Promise<Row[]> {
  const writes = events?.writing(ids);
  let rows: Row[] = [];
  try {
    rows = await write();
    return rows;
  } finally {
    if (writes) events?.written(writes, rows);
  }
}
