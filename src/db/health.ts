import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'kysely';
import type { Logger } from 'pino';
import type { Db } from './connect.js';
import { DatabaseUnavailable } from './faults.js';
import { isMigrated } from './migrate.js';

/** `/readyz` answers within this, whatever the database does (DESIGN §12). */
export const READY_TIMEOUT_MS = 2_000;

/**
 * True when the database answers and is migrated; false on any failure, and when it has not
 * answered within `timeoutMs` (a black-holed server never does, and a probe must not hang).
 */
export async function databaseReady(
  db: Db,
  log: Logger,
  timeoutMs = READY_TIMEOUT_MS,
): Promise<boolean> {
  const gaveUp = new AbortController();
  const check = (async () => {
    await sql`select 1`.execute(db.kysely);
    return isMigrated(db.kysely);
  })();
  try {
    return await Promise.race([
      check,
      sleep(timeoutMs, 'timeout' as const, { signal: gaveUp.signal }).then(() => {
        log.warn(`readiness check timed out after ${timeoutMs} ms`);
        return false;
      }),
    ]);
  } catch (err) {
    // A connection fault has been logged, with its cause, where it was classified.
    if (!(err instanceof DatabaseUnavailable)) log.warn({ err }, 'readiness check failed');
    return false;
  } finally {
    gaveUp.abort();
    // The query goes on until its own timeout; its outcome no longer matters.
    check.catch(() => {});
  }
}
