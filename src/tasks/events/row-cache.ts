import type { TaskRow } from '../../db/types.js';
import { isTerminal } from '../status.js';

export interface RowCacheOptions {
  /** Rows kept at most; 0 keeps none (reads of one task are still shared). @default 10_000 */
  maxRows?: number;
  /** Rows whose payloads (input, result, inputRequest, error) exceed this, as JSON text, are not kept. @default 16_384 */
  maxRowBytes?: number;
}

/** A statement in flight that returns a task's row: a read, or a write of this process. */
interface Pending {
  /** Highest version announced while it was in flight: an older row may not be kept. */
  announced: number;
}

interface Flight extends Pending {
  promise: Promise<TaskRow | undefined>;
}

/** A write of this process to one task, in flight (see `RowCache.writing`). */
export interface PendingWrite extends Pending {
  readonly id: string;
  readonly epoch: number;
}

/**
 * Task rows as last read, so that asking again for an unchanged task does not touch
 * Postgres. Kept correct by the event stream, which announces every change to every task:
 *
 * - a change announced for a version above the cached one drops the row; a read in flight when
 *   it is announced is not joined by later readers, and kept only if it returned that version;
 * - a row that is not final is kept, and served, only while the listening connection is up
 *   (no announcement can be missed); losing it drops them all;
 * - a final row (completed, failed, cancelled) never changes again, so it stays until evicted;
 *   callers still check `expires_at` and the owner, as the SQL would.
 *
 * The rows are raw (expired and foreign ones included): callers scope them. Concurrent reads
 * of one task share one query. A change committed by another process reaches this cache as
 * fast as it reaches this process's subscribers (one NOTIFY); one committed here drops the
 * row at once (`changed`), so a process never answers older than what it has itself returned,
 * and the row its statement returned is kept by the same rule as a read's (`writing`).
 */
export class RowCache {
  private readonly rows = new Map<string, TaskRow>();
  /** The read of each task that later readers may join. */
  private readonly flights = new Map<string, Flight>();
  /**
   * Every read still in flight, joinable or not: an announcement must reach a read that
   * readers may no longer join too, or it would land and be kept though a newer version was
   * announced while it was out.
   */
  private readonly reading = new Map<string, Set<Pending>>();
  private readonly maxRows: number;
  private readonly maxRowBytes: number;
  /** Bumped whenever the listening connection goes down or comes back. */
  private epoch = 0;
  private live = false;
  hits = 0;
  misses = 0;

  constructor(
    private readonly readRow: (id: string) => Promise<TaskRow | undefined>,
    options: RowCacheOptions = {},
  ) {
    this.maxRows = options.maxRows ?? 10_000;
    this.maxRowBytes = options.maxRowBytes ?? 16_384;
  }

  /** The row as stored (cached or read now); `undefined` when there is none. */
  read(id: string): Promise<TaskRow | undefined> {
    const cached = this.rows.get(id);
    if (cached && (this.live || final(cached))) {
      this.hits++;
      return Promise.resolve(cached);
    }
    const flying = this.flights.get(id);
    if (flying) return flying.promise;
    this.misses++;
    const epoch = this.epoch;
    const flight: Flight = { promise: this.readRow(id), announced: 0 };
    this.flights.set(id, flight);
    const all = this.pending(id, flight);
    const land = () => {
      if (this.flights.get(id) === flight) this.flights.delete(id);
      all.delete(flight);
      if (all.size === 0 && this.reading.get(id) === all) this.reading.delete(id);
    };
    flight.promise.then((row) => {
      land();
      if (row && row.version >= flight.announced && epoch === this.epoch) this.keep(row);
    }, land);
    return flight.promise;
  }

  /** Version `version` of task `id` was committed: anything older is dropped. */
  changed(id: string, version: number): void {
    const cached = this.rows.get(id);
    if (cached && cached.version < version) this.rows.delete(id);
    for (const flight of this.reading.get(id) ?? [])
      flight.announced = Math.max(flight.announced, version);
    // Readers from now on must not join a read that may have begun before this change.
    this.flights.delete(id);
  }

  /**
   * This process sends a statement that returns task `id`'s row (see `wrote`): changes
   * announced meanwhile are counted against it, as they are against a read.
   */
  writing(id: string): PendingWrite {
    const write = { id, epoch: this.epoch, announced: 0 };
    this.pending(id, write);
    return write;
  }

  /**
   * The statement announced by `writing` is over, and returned `row` (none: it failed or
   * changed nothing; only its version: nothing is kept). Anything older goes; the row is kept, as a read's would be, unless a
   * newer version was announced while the statement was out or the listening connection
   * went down meanwhile (a final row is kept in any case: it never changes again).
   */
  wrote(
    write: PendingWrite,
    row: TaskRow | { id: string; version: number; summary: true } | undefined,
  ): void {
    const all = this.reading.get(write.id);
    all?.delete(write);
    if (all?.size === 0) this.reading.delete(write.id);
    if (!row) return;
    this.changed(row.id, row.version);
    if ('summary' in row) return;
    if (final(row) || (row.version >= write.announced && write.epoch === this.epoch))
      this.keep(row);
  }

  private pending(id: string, entry: Pending): Set<Pending> {
    const all = this.reading.get(id) ?? new Set<Pending>();
    this.reading.set(id, all);
    all.add(entry);
    return all;
  }

  /** The listening connection is up (again): rows not final may be kept from now on. */
  connected(): void {
    this.epoch++;
    this.live = true;
  }

  /** The listening connection is down: changes may go unannounced, so only final rows stay. */
  disconnected(): void {
    this.epoch++;
    this.live = false;
    for (const [id, row] of this.rows) if (!final(row)) this.rows.delete(id);
    for (const all of this.reading.values()) for (const flight of all) flight.announced = Infinity;
    this.flights.clear();
  }

  get size(): number {
    return this.rows.size;
  }

  /** True while a row of task `id` is kept (of any version). */
  has(id: string): boolean {
    return this.rows.has(id);
  }

  private keep(row: TaskRow): void {
    if (this.maxRows === 0 || (!this.live && !final(row))) return;
    const cached = this.rows.get(row.id);
    if (cached && cached.version >= row.version) return;
    if (payloadBytes(row) > this.maxRowBytes) return;
    this.rows.delete(row.id);
    if (this.rows.size >= this.maxRows) {
      const oldest = this.rows.keys().next().value;
      if (oldest !== undefined) this.rows.delete(oldest);
    }
    this.rows.set(row.id, row);
  }
}

function final(row: TaskRow): boolean {
  return isTerminal(row.status);
}

function payloadBytes(row: TaskRow): number {
  let bytes = 0;
  for (const value of [row.input, row.result, row.input_requests ?? row.input_request, row.error]) {
    if (value != null) bytes += JSON.stringify(value).length;
  }
  return bytes;
}
