import type { Logger } from 'pino';
import type { Listener } from '../../db/listen.js';
import type { TaskRow } from '../../db/types.js';
import { coerceError } from '../../errors.js';
import { READY_CHANNEL, TASK_CHANNEL } from '../sql/common.js';
import { DELIVERY_CHANNEL } from '../webhooks/store.js';
import { Handout, type RowWatcher } from './handout.js';
import { type PendingWrite, RowCache, type RowCacheOptions } from './row-cache.js';

export type { RowWatcher };

/** A row a write returned only in part: which version of the task it wrote (`recordOutcomes`). */
export interface RowVersion {
  id: string;
  version: number;
  summary: true;
}

/**
 * Channel the schedules room notifies on whenever a schedule changes or fires (DESIGN §17):
 * every process that fires schedules re-reads the earliest occurrence.
 */
export const SCHEDULE_CHANNEL = 'taskhandle_schedule';

interface Watched {
  watchers: Set<RowWatcher>;
  /** Hands rows to the watchers, a part of them a turn. */
  handout: Handout;
  /** Highest version announced by NOTIFY or already read. */
  announced: number;
  /** Highest version read and delivered. */
  delivered: number;
  reading: boolean;
  /** Another read is wanted once the one in flight lands. */
  again: boolean;
  /** The next read must happen whatever the versions say (notifications may have been missed). */
  forced: boolean;
}

/**
 * The process's event hub: one LISTEN connection, fanned out to every local watcher. A
 * notification carries only `id:version`; the row is re-read once per change per process
 * however many watchers there are (reads of one task are coalesced), and a notification for
 * a version already read costs nothing. After the listener reconnects, every watched task
 * is re-read, so no final state is lost.
 *
 * The same stream keeps a cache of rows correct (see RowCache): `read` answers an unchanged
 * task without a query.
 */
export class TaskEvents {
  private readonly watched = new Map<string, Watched>();
  private readonly readyHandlers = new Set<(kind: string) => void>();
  private readonly reconnectHandlers = new Set<() => void>();
  private readonly changeHandlers = new Set<(id: string, version: number) => void>();
  private readonly deliveryHandlers = new Set<() => void>();
  private readonly scheduleHandlers = new Set<() => void>();
  private readonly rows: RowCache;
  /** Tasks with a statement of this process in flight (see `writing`), and how many. */
  private readonly writes = new Map<string, number>();

  constructor(
    private readonly listener: Listener,
    readRow: (id: string) => Promise<TaskRow | undefined>,
    private readonly log: Logger,
    cacheOptions?: RowCacheOptions,
  ) {
    this.rows = new RowCache(readRow, cacheOptions);
  }

  /**
   * Starts listening. `onReady`, `onDeliveryDue` and `onSchedulesChanged` only hear news in a
   * process started with `work: true`: one that serves the API only is not sent the news of
   * every task queued and every delivery written (each a message to read on its listening
   * connection).
   */
  async start({ work = true }: { work?: boolean } = {}): Promise<void> {
    const channels = work
      ? [TASK_CHANNEL, READY_CHANNEL, DELIVERY_CHANNEL, SCHEDULE_CHANNEL]
      : [TASK_CHANNEL];
    await this.listener.start(channels, {
      notify: (channel, payload) => {
        if (channel === TASK_CHANNEL) this.changed(payload);
        else if (channel === DELIVERY_CHANNEL)
          for (const handler of this.deliveryHandlers) handler();
        else if (channel === SCHEDULE_CHANNEL)
          for (const handler of this.scheduleHandlers) handler();
        else for (const handler of this.readyHandlers) handler(payload);
      },
      disconnected: () => this.rows.disconnected(),
      reconnected: () => {
        this.rows.connected();
        for (const [id, entry] of this.watched) {
          entry.forced = true; // unknown what was missed: read whatever is there now
          this.refresh(id);
        }
        for (const handler of this.reconnectHandlers) handler();
      },
    });
    this.rows.connected();
  }

  stop(): Promise<void> {
    this.rows.disconnected();
    return this.listener.stop();
  }

  /**
   * Task `id`'s row as stored, expired or not, whoever owns it (callers scope it): from the
   * cache when the event stream vouches that it is unchanged, else read (one query shared by
   * concurrent callers).
   */
  read(id: string): Promise<TaskRow | undefined> {
    return this.rows.read(id);
  }

  /** This process committed version `version` of task `id`: older cached state goes at once. */
  committed(id: string, version: number): void {
    this.rows.changed(id, version);
  }

  /**
   * True when a write of task `id` should return its whole row: the task has a watcher in this
   * process, or its row is in the cache (read or written here lately: a start in a ROLE=all
   * process, whose subscriber and polls follow, are then served the outcome without a query).
   */
  wantsRow(id: string): boolean {
    return this.watched.has(id) || this.rows.has(id);
  }

  /**
   * This process sends a statement that may change tasks `ids` and returns their rows: until
   * `written`, a NOTIFY of theirs (it can arrive before the statement's answer) is not read.
   * @returns what to hand `written`
   */
  writing(ids: readonly string[]): PendingWrite[] {
    for (const id of ids) this.writes.set(id, (this.writes.get(id) ?? 0) + 1);
    return ids.map((id) => this.rows.writing(id));
  }

  /**
   * The statement announced by `writing` is over; it committed `rows` (none if it failed).
   * The watchers of each task here get its row now, as they would after its NOTIFY and a read,
   * and that NOTIFY costs nothing (its version is delivered already); other processes still
   * learn of the change by it. Each row is cached for the reads that follow, by the rule a
   * read's row is (see `RowCache.wrote`). A change announced meanwhile that is not in `rows`,
   * or of which `rows` holds only the version, is read now.
   */
  written(writes: readonly PendingWrite[], rows: ReadonlyArray<TaskRow | RowVersion>): void {
    const ids = writes.map((write) => write.id);
    for (const id of ids) {
      const left = (this.writes.get(id) ?? 1) - 1;
      if (left > 0) this.writes.set(id, left);
      else this.writes.delete(id);
    }
    const byId = new Map(rows.map((row) => [row.id, row]));
    for (const write of writes) this.rows.wrote(write, byId.get(write.id));
    for (const row of rows) {
      const entry = this.watched.get(row.id);
      if (!entry || row.version <= entry.delivered) continue;
      entry.announced = Math.max(entry.announced, row.version);
      // Only a version (its watcher came while the statement was out): read below, as a NOTIFY.
      if (!('summary' in row)) this.deliver(entry, row);
    }
    for (const id of ids) {
      const entry = this.watched.get(id);
      if (entry && !this.writes.has(id) && entry.announced > entry.delivered) this.refresh(id);
    }
  }

  /** Running totals of the row cache, for metrics (`/metrics`) and the benchmark. */
  get cacheStats(): { hits: number; misses: number; size: number } {
    return { hits: this.rows.hits, misses: this.rows.misses, size: this.rows.size };
  }

  /** Runs `handler` whenever a task of some kind becomes claimable (payload: the kind). */
  onReady(handler: (kind: string) => void): () => void {
    this.readyHandlers.add(handler);
    return () => this.readyHandlers.delete(handler);
  }

  /** Runs `handler` whenever webhook deliveries may have become due (DESIGN §11). */
  onDeliveryDue(handler: () => void): () => void {
    this.deliveryHandlers.add(handler);
    return () => this.deliveryHandlers.delete(handler);
  }

  /** Runs `handler` whenever a schedule was changed or fired (DESIGN §17). */
  onSchedulesChanged(handler: () => void): () => void {
    this.scheduleHandlers.add(handler);
    return () => this.scheduleHandlers.delete(handler);
  }

  /** Runs `handler` after the listening connection came back (notifications may be lost). */
  onReconnect(handler: () => void): () => void {
    this.reconnectHandlers.add(handler);
    return () => this.reconnectHandlers.delete(handler);
  }

  /**
   * Runs `handler` with `id` and `version` of every task change announced, whoever owns the
   * task (the owner-level subscriptions filter by reading the row through `read`).
   */
  onChange(handler: (id: string, version: number) => void): () => void {
    this.changeHandlers.add(handler);
    return () => this.changeHandlers.delete(handler);
  }

  /**
   * Calls `watcher` with the re-read row after each change to task `id`. Register before
   * reading the current state, so no change falls between the two.
   * @returns a function that stops watching
   */
  watch(id: string, watcher: RowWatcher): () => void {
    let entry = this.watched.get(id);
    if (!entry) {
      const watchers = new Set<RowWatcher>();
      entry = {
        watchers,
        handout: new Handout(watchers, (err) =>
          this.log.error({ err: coerceError(err), taskId: id }, 'task watcher threw'),
        ),
        announced: 0,
        delivered: 0,
        reading: false,
        again: false,
        forced: false,
      };
      this.watched.set(id, entry);
    }
    entry.watchers.add(watcher);
    return () => this.unwatch(id, watcher);
  }

  /** Stops calling `watcher` for task `id` (what `watch` returns does the same). */
  unwatch(id: string, watcher: RowWatcher): void {
    const entry = this.watched.get(id);
    if (!entry) return;
    entry.watchers.delete(watcher);
    if (entry.watchers.size === 0) this.watched.delete(id);
  }

  /** Number of tasks watched in this process, for metrics (`/metrics`). */
  get watchedCount(): number {
    return this.watched.size;
  }

  private changed(payload: string): void {
    const colon = payload.lastIndexOf(':');
    const id = payload.slice(0, colon);
    const version = Number(payload.slice(colon + 1));
    this.rows.changed(id, version);
    for (const handler of this.changeHandlers) handler(id, version);
    const entry = this.watched.get(id);
    if (!entry || version <= entry.delivered) return;
    entry.announced = Math.max(entry.announced, version);
    if (!this.writes.has(id)) this.refresh(id);
  }

  /** Hands `row` (`undefined`: gone) to every watcher of the task (see Handout). */
  private deliver(entry: Watched, row: TaskRow | undefined): void {
    entry.delivered = row?.version ?? entry.delivered;
    entry.handout.give(row);
  }

  private refresh(id: string): void {
    const entry = this.watched.get(id);
    if (!entry) return;
    if (entry.reading) {
      entry.again = true;
      return;
    }
    entry.reading = true;
    entry.again = false;
    entry.forced = false;
    this.rows.read(id).then(
      (row) => {
        entry.reading = false;
        if (!row || row.version > entry.delivered) this.deliver(entry, row);
        if (
          entry.again &&
          (entry.forced || entry.announced > entry.delivered) &&
          this.watched.get(id) === entry
        )
          this.refresh(id);
      },
      (err: unknown) => {
        entry.reading = false;
        entry.forced = true;
        this.log.warn(
          { err: coerceError(err), taskId: id },
          'could not re-read a changed task; retrying',
        );
        setTimeout(() => this.refresh(id), 200).unref();
      },
    );
  }
}
