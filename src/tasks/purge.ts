import { setTimeout as sleep } from 'node:timers/promises';
import { type Kysely, sql } from 'kysely';
import type { Logger } from 'pino';
import type { Database } from '../db/types.js';
import { coerceError } from '../errors.js';
import { deliveriesGone, deliveriesOfBatch } from './webhooks/deliveries.js';

export interface PurgeOptions {
  /** Rows per DELETE statement. @default 1000 */
  batchSize?: number;
  /**
   * After each full batch, rest this many times as long as the batch took, so a large backlog
   * takes at most 1 / (1 + restRatio) of one database connection's time and serving traffic
   * keeps its latency. 0 runs batches back to back. @default 0
   */
  restRatio?: number;
  /** Stops between batches (a shutdown need not wait for a large backlog). */
  signal?: AbortSignal;
  /** Called after each batch with the rows it deleted (metrics). */
  onBatch?: (rows: number) => void;
}

/**
 * Deletes expired tasks, with their labels, webhooks, deliveries and journals, in batches of `batchSize`, each
 * batch its own short statement that skips rows locked by anyone else (a worker mid-write,
 * another purging process) instead of waiting for them, until a batch comes back short.
 * @returns rows deleted
 */
export async function purgeExpired(
  db: Kysely<Database>,
  options: number | PurgeOptions = {},
): Promise<number> {
  const {
    batchSize = 1_000,
    restRatio = 0,
    signal,
    onBatch,
  } = typeof options === 'number' ? { batchSize: options } : options;
  let total = 0;
  while (!signal?.aborted) {
    const startedAt = Date.now();
    const result = await sql<{ n: number; batched: number }>`
      with batch as (
        select id from tasks where expires_at <= now()
        order by expires_at
        limit ${batchSize}::int
        for update skip locked
      ), ${deliveriesOfBatch}, gone as (
        delete from tasks
        where id in (select id from batch) and id not in (select task_id from held)
        returning id
      ), webhooks as (
        delete from task_webhooks where task_id in (select id from gone)
      ), labels as (
        delete from task_labels where task_id in (select id from gone)
      ), steps as (
        -- the journal, kept signals and signal URLs (DESIGN §16); a task's children expire
        -- no later than it, and go in their own batch
        delete from task_steps where task_id in (select id from gone)
      ), signals as (
        delete from task_signals where task_id in (select id from gone)
      ), tokens as (
        delete from task_signal_tokens where task_id in (select id from gone)
      ), ${deliveriesGone}
      select (select count(*)::int from gone) as n, (select count(*)::int from batch) as batched`.execute(
      db,
    );
    const n = result.rows[0]?.n ?? 0;
    total += n;
    onBatch?.(n);
    // A short batch was the last; one whose tasks were all held is tried again next pass.
    if ((result.rows[0]?.batched ?? 0) < batchSize || n === 0) return total;
    // An abort ends the rest early; the loop then stops.
    if (restRatio > 0)
      await sleep(restRatio * (Date.now() - startedAt), undefined, { signal }).catch(() => {});
  }
  return total;
}

/**
 * Forgets the first starts that rate limits no longer count (DESIGN §17): those past their
 * task's period. A claim forgets its key's own as it records a new start; this is for keys no
 * claim comes back to. Batches of `batchSize`, until one comes back short.
 * @returns rows deleted
 */
export async function forgetRateStarts(
  db: Kysely<Database>,
  { batchSize = 1_000, signal }: Pick<PurgeOptions, 'batchSize' | 'signal'> = {},
): Promise<number> {
  let total = 0;
  while (!signal?.aborted) {
    const result = await sql`
      delete from task_rate_starts where ctid = any(array(
        select ctid from task_rate_starts where forget_at <= now() limit ${batchSize}::int))`.execute(
      db,
    );
    const n = Number(result.numAffectedRows ?? 0);
    total += n;
    if (n < batchSize) break;
  }
  return total;
}

/** What the scheduled purge uses: batches of 1 000, resting as long as each batch took. */
export const PURGE_DEFAULTS = { batchSize: 1_000, restRatio: 1 } as const satisfies PurgeOptions;

/** Runs `purgeExpired` every `intervalMs` with PURGE_DEFAULTS; one pass at a time per process. */
export class Purger {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private readonly stopping = new AbortController();

  constructor(
    private readonly db: Kysely<Database>,
    private readonly intervalMs: number,
    private readonly log: Logger,
    /** Overrides PURGE_DEFAULTS (tests, benchmarks). */
    private readonly options: Omit<PurgeOptions, 'signal'> = {},
  ) {}

  start(): void {
    this.timer = setInterval(() => void this.runOnce(), this.intervalMs);
  }

  /** One pass now (or the pass in progress); resolves when it ends. Never rejects. */
  runOnce(): Promise<void> {
    this.running ??= (async () => {
      try {
        const deleted = await purgeExpired(this.db, {
          ...PURGE_DEFAULTS,
          ...this.options,
          signal: this.stopping.signal,
        });
        if (deleted > 0) this.log.info({ deleted }, 'purged expired tasks');
        await forgetRateStarts(this.db, { signal: this.stopping.signal });
      } catch (err) {
        this.log.warn({ err: coerceError(err) }, 'purge failed; retrying next interval');
      } finally {
        this.running = undefined;
      }
    })();
    return this.running;
  }

  /** Stops the schedule and the pass in progress after its current batch. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.stopping.abort();
    await this.running;
  }
}
