import { setTimeout as sleep } from 'node:timers/promises';
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { Database } from '../../db/types.js';
import { coerceError } from '../../errors.js';
import type { TaskContext } from '../kinds.js';
import { type Lease, reportProgress } from '../sql/leases.js';

export interface ProgressWriterOptions {
  db: Kysely<Database>;
  log: Logger;
  taskId: string;
  lease: Lease;
  /** The handler's signal: once aborted, nothing more is written. */
  signal: AbortSignal;
  /** Least time between two writes. */
  throttleMs: number;
}

/**
 * A handler's `progress`: fraction clamped to 0..1 (null when not finite), at most one write
 * in flight and one per `throttleMs`; reports that arrive meanwhile replace each other, so the
 * latest wins. A failed write is logged, not thrown: progress is advisory.
 */
export function progressWriter({
  db,
  log,
  taskId,
  lease,
  signal,
  throttleMs,
}: ProgressWriterOptions): TaskContext['progress'] {
  let pending: { fraction: number | null; message: string | null } | null = null;
  let writing = false;
  let lastWrite = 0;
  const flush = async (): Promise<void> => {
    if (writing || !pending || signal.aborted) return;
    const wait = lastWrite + throttleMs - Date.now();
    if (wait > 0) {
      writing = true;
      await sleep(wait);
      writing = false;
    }
    const next = pending;
    pending = null;
    if (!next) return;
    writing = true;
    lastWrite = Date.now();
    try {
      await reportProgress(db, taskId, lease, next.fraction, next.message);
    } catch (err) {
      log.warn({ err: coerceError(err), taskId }, 'progress not recorded');
    } finally {
      writing = false;
    }
    if (pending) void flush();
  };
  return (fraction, message) => {
    const clamped = Number.isFinite(fraction) ? Math.min(1, Math.max(0, fraction)) : null;
    pending = { fraction: clamped, message: message ?? null };
    void flush();
  };
}
