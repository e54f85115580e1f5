import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { Database, StepRow, TaskRow } from '../../db/types.js';
import { coerceError } from '../../errors.js';
import { jsonText } from '../sql/common.js';
import type { Lease } from '../sql/leases.js';
import { completeWaits, loadJournal } from './journal-sql.js';
import { checkStepName } from './names.js';

/** What a run's journal reads and writes with. */
export interface RunJournalParts {
  db: Kysely<Database>;
  log: Logger;
  /** The row as claimed. */
  row: TaskRow;
  lease: Lease;
}

/**
 * A task's journal as one run of its handler sees it (DESIGN §16): the entries earlier runs
 * journalled, the kept signals, the names this run has used, and each entry's place. What a
 * step, a wait or a child writes goes through the run (durable-run.ts); this is what they
 * share.
 */
export class RunJournal {
  steps = new Map<string, StepRow>();
  signals = new Map<string, unknown>();
  private readonly used = new Set<string>();
  private readonly positions = new Map<string, number>();
  private nextPosition = 1;
  /** Whether the task row says it has a journal (set by its first journal write). */
  private journaled: boolean;

  constructor(private readonly parts: RunJournalParts) {
    this.journaled = parts.row.journaled;
  }

  /** Reads the journal when the task has one; a task that never journalled costs no read. */
  async load(): Promise<void> {
    if (!this.journaled) return;
    const journal = await loadJournal(this.parts.db, this.parts.row.id);
    this.steps = journal.steps;
    this.signals = journal.signals;
    for (const step of this.steps.values())
      this.nextPosition = Math.max(this.nextPosition, step.position + 1);
  }

  /**
   * For a write about to go to the journal: whether it is the task's first, which marks the
   * row `journaled` in the same statement.
   */
  firstWrite(): boolean {
    const first = !this.journaled;
    this.journaled = true;
    return first;
  }

  /** The journal was written by another path (a suspension that found its waits satisfied). */
  written(): void {
    this.journaled = true;
  }

  /** Claims `name` for this run. @throws STEP_NAME_REUSED the second time */
  use(name: string, what: string): string {
    checkStepName(name, what);
    if (this.used.has(name))
      throw Object.assign(
        new Error(`The step name ${JSON.stringify(name)} was used twice in one run.`),
        { code: 'STEP_NAME_REUSED' },
      );
    this.used.add(name);
    return name;
  }

  /** The entry's place in the journal: its own, or the next one, kept for the run. */
  position(name: string): number {
    const known = this.steps.get(name)?.position ?? this.positions.get(name);
    if (known !== undefined) return known;
    const position = this.nextPosition++;
    this.positions.set(name, position);
    return position;
  }

  /** Whether `at` has come, by this clock or by the one that woke the task. */
  due(at: Date): boolean {
    return at.getTime() <= Math.max(Date.now(), this.parts.row.run_at.getTime());
  }

  /** Records a wait found satisfied, without waiting for the write (see `completeWaits`). */
  complete(name: string, value: unknown): void {
    const { db, row, lease, log } = this.parts;
    let result: string | null;
    try {
      result = jsonText(value ?? null);
    } catch {
      result = null;
    }
    void completeWaits(
      db,
      row.id,
      lease,
      [{ name, position: this.position(name), result }],
      this.firstWrite(),
    ).catch((err: unknown) =>
      log.debug({ err: coerceError(err), taskId: row.id }, 'could not mark a wait done'),
    );
  }
}
