import type { TaskRow } from '../../db/types.js';

/** Called with the task's row as re-read after a change, or `undefined` once the row is gone. */
export type RowWatcher = (row: TaskRow | undefined) => void;

/**
 * Watchers handed a row in one turn of the event loop. Past this many, the rest get it in
 * later turns: the sockets of the first already write while the others are still being
 * served, and other work (a request's answer, say) does not wait behind ten thousand.
 */
const WATCHERS_PER_TURN = 256;

/** One row on its way to the watchers that were there when it came. */
interface Handing {
  row: TaskRow | undefined;
  watchers: RowWatcher[];
  next: number;
}

/**
 * Hands one task's rows to its watchers: the first WATCHERS_PER_TURN at once, the rest in
 * later turns. Every watcher gets the rows in the order they came (a row that comes while an
 * earlier one is still being handed out waits for it), and one that stopped watching
 * meanwhile is not called.
 */
export class Handout {
  /** Rows waiting for the one being handed out, oldest first; undefined: none under way. */
  private waiting: Handing[] | undefined;

  constructor(
    private readonly watchers: ReadonlySet<RowWatcher>,
    private readonly threw: (err: unknown) => void,
  ) {}

  give(row: TaskRow | undefined): void {
    const handing: Handing = { row, watchers: [...this.watchers], next: 0 };
    if (this.waiting) this.waiting.push(handing);
    else this.hand(handing);
  }

  private hand(handing: Handing): void {
    const { row, watchers } = handing;
    const end = Math.min(watchers.length, handing.next + WATCHERS_PER_TURN);
    for (let i = handing.next; i < end; i++) {
      const watcher = watchers[i]!;
      if (!this.watchers.has(watcher)) continue;
      try {
        watcher(row);
      } catch (err) {
        this.threw(err);
      }
    }
    handing.next = end;
    const rest = end < watchers.length ? handing : this.waiting?.shift();
    if (!rest) {
      this.waiting = undefined;
      return;
    }
    this.waiting ??= [];
    setImmediate(() => this.hand(rest));
  }
}
