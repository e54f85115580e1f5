import { sql, type Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { Database } from '../db/types.js';
import { coerceError } from './errors.js';

/**
 * Deletes expired tasks in batches of `batchSize`, each its own short statement that skips
 * rows locked by anyone else (a worker mid-write, another purging process) instead of waiting
 * for them, until a batch comes back short.
 * @returns rows deleted
 */
export async function purgeExpired(db: Kysely<Database>, batchSize = 1_000): Promise<number> {
  let total = 0;
  for (;;) {
    const result = await sql<{ n: number }>`
      with gone as (
        delete from tasks where id in (
          select id from tasks where expires_at <= now()
          order by expires_at
          limit ${batchSize}::int
          for update skip locked
        )
        returning 1
      )
      select count(*)::int as n from gone`.execute(db);
    const n = result.rows[0]?.n ?? 0;
    total += n;
    if (n < batchSize) return total;
  }
}

/** Runs `purgeExpired` every `intervalMs`; one pass at a time per process. */
export class Purger {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly intervalMs: number,
    private readonly log: Logger,
    private readonly batchSize = 1_000,
  ) {}

  start(): void {
    this.timer = setInterval(() => void this.runOnce(), this.intervalMs);
  }

  runOnce(): Promise<void> {
    this.running ??= (async () => {
      try {
        const deleted = await purgeExpired(this.db, this.batchSize);
        if (deleted > 0) this.log.info({ deleted }, 'purged expired tasks');
      } catch (err) {
        this.log.warn({ err: coerceError(err) }, 'purge failed; retrying next interval');
      } finally {
        this.running = undefined;
      }
    })();
    return this.running;
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
  }
}
