import { setTimeout as sleep } from 'node:timers/promises';
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { Database, TaskRow } from '../../db/types.js';
import { coerceError } from '../../errors.js';
import type { TaskEvents } from '../events/hub.js';
import { completeTask, failTask, type Lease, retryOrFail } from '../sql/leases.js';
import type { WrittenOutcome } from '../sql/outcomes.js';
import type { TaskFailure } from '../status.js';
import { OutcomeWriter, writtenHere } from './outcome-writer.js';

const CODE = /^[A-Z][A-Z0-9_]{1,63}$/;

/**
 * What a thrown error means for the task: its own upper-case `code`, or HANDLER_ERROR. Never
 * throws: a `code` or `message` that cannot be read counts as none.
 */
export function failureOf(err: Error): TaskFailure {
  const code = read(() => (err as { code?: unknown }).code);
  const message = read(() => err.message);
  return {
    code: typeof code === 'string' && CODE.test(code) ? code : 'HANDLER_ERROR',
    message: sanitize(typeof message === 'string' && message ? message : 'The task failed.').slice(
      0,
      2_000,
    ),
  };
}

/** A property read that may throw (a hostile getter): `undefined` then. */
function read(get: () => unknown): unknown {
  try {
    return get();
  } catch {
    return undefined;
  }
}

/**
 * Logs how a handler failed. A logger walks the error's properties and causes; one that
 * throws while doing so (a hostile getter) gets the failure without the error instead.
 */
export function logFailure(log: Logger, err: Error, failure: TaskFailure): void {
  try {
    log.info({ err, code: failure.code }, 'handler failed');
  } catch {
    log.info({ code: failure.code, message: failure.message }, 'handler failed');
  }
}

/** Text Postgres can store: no U+0000. */
const sanitize = (text: string) => text.replaceAll('\0', '');

/**
 * An error the same write would meet again: Postgres data exceptions and integrity violations
 * (SQLSTATE classes 22, 23), or a value JSON cannot express (TypeError, RangeError from
 * JSON.stringify). Anything else — a lost connection, a timeout — may pass.
 */
function isPermanent(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && /^2[23][0-9A-Z]{3}$/.test(code)) return true;
  return err instanceof TypeError || err instanceof RangeError;
}

/** The task's logger, made when something is to be logged (most outcomes log nothing). */
export type TaskLog = () => Logger;

/**
 * Records how a handler ended, fenced by its lease, in batches (see `OutcomeWriter`). Writes
 * are retried through a short database outage for as long as the lease lasts; past it the task
 * is left to be re-run. A batch the store refuses (a data error) is written again one outcome
 * at a time, so one bad outcome does not fail the others that shared its statement.
 */
export class OutcomeRecorder {
  private readonly writer: OutcomeWriter;

  /** @param events told of every row written, for this process's watchers (see `OutcomeWriter`) */
  constructor(
    private readonly db: Kysely<Database>,
    private readonly leaseMs: number,
    private readonly events?: TaskEvents,
  ) {
    this.writer = new OutcomeWriter(db, events);
  }

  /**
   * Completes the task. A result the store refuses — not JSON (a BigInt, a cycle), or a string
   * with U+0000 — fails this task with HANDLER_ERROR instead of being retried and re-run until
   * WORKER_LOST; a refusal of the batch is first retried alone.
   */
  async complete(id: string, lease: Lease, result: unknown, log: TaskLog): Promise<void> {
    try {
      await this.retry(() => this.writer.complete(id, lease, result), log);
      return;
    } catch {
      // Permanent, for this result or another one in the batch: see which, alone.
    }
    try {
      await this.retry(() => this.alone(id, () => completeTask(this.db, id, lease, result)), log);
    } catch (thrown) {
      const err = coerceError(thrown);
      const failure: TaskFailure = {
        code: 'HANDLER_ERROR',
        message: sanitize(`The task's result could not be stored: ${err.message}`),
      };
      logFailure(log(), err, failure);
      await this.fail(id, lease, failure, log);
    }
  }

  /** Fails the task with `failure`; never throws (what cannot be written is logged). */
  async fail(id: string, lease: Lease, failure: TaskFailure, log: TaskLog): Promise<void> {
    await this.batchedElseAlone(
      () => this.writer.fail(id, lease, failure),
      () => this.alone(id, () => failTask(this.db, id, lease, failure)),
      log,
    );
  }

  /**
   * Ends a failed attempt: the task is retried after `delayMs` while attempts and time remain,
   * else failed (see `retryOrFail`). Never throws.
   * @returns the row as written (or its summary); `undefined` when nothing was (a lost lease,
   *   a cancel)
   */
  async endAttempt(
    id: string,
    lease: Lease,
    failure: TaskFailure,
    delayMs: number,
    log: TaskLog,
  ): Promise<WrittenOutcome | undefined> {
    return this.batchedElseAlone(
      () => this.writer.retryOrFail(id, lease, failure, delayMs),
      () => this.alone(id, () => retryOrFail(this.db, id, lease, failure, delayMs)),
      log,
    );
  }

  /** An outcome written alone (a batch was refused): its row goes to the watchers, as a batch's. */
  private async alone(
    id: string,
    write: () => Promise<TaskRow | undefined>,
  ): Promise<TaskRow | undefined> {
    const [row] = await writtenHere(this.events, [id], async () => {
      const row = await write();
      return row ? [row] : [];
    });
    return row;
  }

  /** Writes a failure in the batch, or alone if the batch was refused; never throws. */
  private async batchedElseAlone(
    batched: () => Promise<WrittenOutcome | undefined>,
    alone: () => Promise<WrittenOutcome | undefined>,
    log: TaskLog,
  ): Promise<WrittenOutcome | undefined> {
    let row: WrittenOutcome | undefined;
    try {
      await this.retry(async () => {
        row = await batched();
      }, log);
      return row;
    } catch {
      // Refused, for this outcome or another one in the batch: see which, alone.
    }
    await this.retry(async () => {
      row = await alone();
    }, log).catch((err: unknown) =>
      log().error(
        { err: coerceError(err) },
        'could not record the failure; the task will be re-run',
      ),
    );
    return row;
  }

  /**
   * Retries a final write through a short database outage, for as long as the lease lasts.
   * @throws what no retry can fix (see `isPermanent`), at once
   */
  private async retry(write: () => Promise<unknown>, log: TaskLog): Promise<void> {
    const until = Date.now() + this.leaseMs;
    for (let delay = 50; ; delay = Math.min(delay * 2, 2_000)) {
      try {
        await write();
        return;
      } catch (err) {
        if (isPermanent(err)) throw err;
        if (Date.now() + delay > until) {
          log().error(
            { err: coerceError(err) },
            'could not record the outcome; the task will be re-run',
          );
          return;
        }
        log().warn({ err: coerceError(err) }, 'recording the outcome failed; retrying');
        await sleep(delay);
      }
    }
  }
}
