import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { Database, TaskRow } from '../../db/types.js';
import { coerceError } from '../../errors.js';
import type { InputQuestion } from '../kinds.js';
import { type Lease, markInputRequired } from '../sql/leases.js';
import { type AbortCause, whyLost } from './aborted.js';

/** What a handler's wait for input needs of its running task. */
export interface InputWaitHost {
  db: Kysely<Database>;
  log: Logger;
  lease: Lease;
  /** The handler's signal: an abort rejects the wait. */
  signal: AbortSignal;
  /** The handler now waits: its run-time clock pauses and its slot is free. */
  paused(): void;
  abort(cause: AbortCause): void;
}

/**
 * A handler's `requestInput` and `requestInputs`: the task goes INPUT_REQUIRED with the
 * questions not yet answered, and the handler resumes once the task is WORKING again with
 * every answer stored.
 */
export class InputWait {
  /** The keys the handler waits for (some may be answered already) and how to resume it. */
  private pending: {
    keys: readonly string[];
    resolve(answers: Record<string, unknown>): void;
  } | null = null;

  constructor(private readonly host: InputWaitHost) {}

  /** True while the handler waits for its owner's input. */
  get waiting(): boolean {
    return this.pending !== null;
  }

  /** The handler no longer waits (it ended). */
  end(): void {
    this.pending = null;
  }

  /**
   * Resumes the handler if `row` answers all it waits for. An answer that leaves other
   * questions outstanding keeps the task INPUT_REQUIRED, so only a WORKING row resumes it.
   * @returns whether it resumed
   */
  resumeOn(row: TaskRow): boolean {
    const pending = this.pending;
    if (!pending || row.status !== 'working') return false;
    if (!pending.keys.every((key) => Object.hasOwn(row.answers, key))) return false;
    this.pending = null;
    pending.resolve(answersTo(pending.keys, row.answers));
    return true;
  }

  /** The answers already in `row`, or INPUT_REQUIRED with the rest until every one is given. */
  ask(row: TaskRow, requests: readonly InputQuestion[]): Promise<Record<string, unknown>> {
    const { db, log, lease, signal } = this.host;
    signal.throwIfAborted();
    const keys = requests.map((request) => request.key);
    if (new Set(keys).size !== keys.length)
      return Promise.reject(new TypeError(`Input keys must differ: ${JSON.stringify(keys)}.`));
    const { answers } = row;
    const [first, ...rest] = requests
      .filter((request) => !Object.hasOwn(answers, request.key))
      .map(({ key, message, schema }) => ({ key, message, ...(schema ? { schema } : {}) }));
    if (!first) return Promise.resolve(answersTo(keys, answers));
    let asked: Promise<TaskRow | undefined>;
    try {
      asked = markInputRequired(db, row.id, lease, [first, ...rest]);
    } catch (err) {
      return Promise.reject(err); // a schema JSON cannot express: nothing was asked
    }
    return new Promise<Record<string, unknown>>((resolve, reject) => {
      this.pending = { keys, resolve };
      this.host.paused();
      signal.addEventListener('abort', () => reject(signal.reason), { once: true });
      asked.then(
        (written) => {
          if (!written) void whyLost(db, row.id).then((cause) => this.host.abort(cause));
        },
        (err: unknown) => {
          log.warn({ err: coerceError(err), taskId: row.id }, 'could not ask for input');
          this.host.abort('lease-lost');
        },
      );
    });
  }
}

/** The stored answers to `keys`, by key. */
function answersTo(
  keys: readonly string[],
  answers: Record<string, unknown>,
): Record<string, unknown> {
  return Object.fromEntries(keys.map((key) => [key, answers[key]]));
}
