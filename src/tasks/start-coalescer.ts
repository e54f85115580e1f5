import { AsyncResource } from 'node:async_hooks';
import { DatabaseUnavailable } from '../db/faults.js';
import type { Executor } from '../db/types.js';
import type { InsertOutcome } from './sql/insert.js';
import {
  answerStart,
  inRun,
  type PreparedStart,
  type StoredStart,
  storeStart,
  writeInRuns,
} from './start.js';

/** The most starts one coalesced transaction writes; more wait for the next. */
export const COALESCED_STARTS_MAX = 64;

interface Waiting {
  entry: PreparedStart;
  resolve(stored: StoredStart): void;
  reject(err: unknown): void;
}

/**
 * Writes the process's single starts, coalescing those that arrive while a write is in
 * flight. Postgres serialises notifying commits on one database-wide lock held through each
 * commit's WAL flush (every start notifies), so concurrent starts cannot share a group commit;
 * the lock is taken once a transaction, not once a notification. A start that finds nothing
 * in flight is written alone at once, as it would be without this; those that arrive
 * meanwhile are written together when it is done, up to COALESCED_STARTS_MAX in one
 * transaction, in arrival order and as few statements as `writeInRuns` can (two with one
 * idempotency key behave as if sent one after the other). When none of them has an
 * idempotency key, a webhook, a debounce or a lease (nothing to refuse or settle alone), the
 * transaction is that one statement (one run), with no BEGIN and COMMIT around it: one
 * round trip to Postgres for them all. Every caller is answered after
 * the commit that stores its task, with its own answer: a refusal (IDEMPOTENCY_KEY_REUSED)
 * refuses that entry only. Should a statement of the transaction fail, it is rolled back and
 * each entry written alone, so one entry's failure is its own; when the database is
 * unavailable, every entry fails as a lone start would.
 */
export class StartCoalescer {
  private busy = false;
  private readonly waiting: Waiting[] = [];
  /**
   * The context the coalesced writes run in: this object's, not that of the request whose
   * write happened to end before them (its trace would otherwise own their statements).
   */
  private readonly scope = new AsyncResource('StartCoalescer');

  constructor(
    private readonly db: Executor,
    private readonly max = COALESCED_STARTS_MAX,
  ) {}

  /** Stores a prepared start; resolves once it is committed. */
  store(entry: PreparedStart): Promise<StoredStart> {
    return new Promise<StoredStart>((resolve, reject) => {
      const waiting = { entry, resolve, reject };
      if (this.busy) {
        this.waiting.push(waiting);
        return;
      }
      this.busy = true;
      // Nothing in flight: written alone at once, in its caller's context.
      void alone(this.db, waiting).then(() => this.scope.runInAsyncScope(() => this.drain()));
    });
  }

  private async drain(): Promise<void> {
    try {
      while (this.waiting.length > 0) await this.write(this.waiting.splice(0, this.max));
    } finally {
      this.busy = false;
    }
  }

  /** Settles every entry of `batch`; never throws. */
  private async write(batch: Waiting[]): Promise<void> {
    if (batch.length === 1) return alone(this.db, batch[0]!);
    let outcomes: InsertOutcome[];
    try {
      const entries = batch.map(({ entry }) => entry);
      outcomes = entries.every((entry) => inRun(entry) && entry.task.idempotencyKey === null)
        ? await writeInRuns(this.db, entries)
        : await this.db.transaction().execute((trx) => writeInRuns(trx, entries));
    } catch (err) {
      if (err instanceof DatabaseUnavailable) for (const waiting of batch) waiting.reject(err);
      else await Promise.all(batch.map((waiting) => alone(this.db, waiting)));
      return;
    }
    for (const [index, waiting] of batch.entries()) {
      try {
        waiting.resolve(answerStart(outcomes[index]!));
      } catch (refusal) {
        waiting.reject(refusal);
      }
    }
  }
}

async function alone(db: Executor, { entry, resolve, reject }: Waiting): Promise<void> {
  try {
    resolve(await storeStart(db, entry));
  } catch (err) {
    reject(err);
  }
}
