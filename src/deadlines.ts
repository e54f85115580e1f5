/**
 * Calls `expire(item)` for each item at its instant, with one timer per distinct instant
 * instead of one per item: the sockets of one token (or of tokens minted in the same second)
 * share a timer, so a socket costs a set entry rather than a timer and its arguments.
 */
export class Deadlines<T> {
  private readonly due = new Map<number, { timer: NodeJS.Timeout; items: Set<T> }>();
  private readonly at = new Map<T, number>();

  constructor(private readonly expire: (item: T) => void) {}

  /** Expires `item` at `epochMs` (at once if past); an item has one deadline at most. */
  add(item: T, epochMs: number): void {
    this.delete(item);
    let entry = this.due.get(epochMs);
    if (!entry) {
      const ms = Math.max(0, Math.min(2 ** 31 - 1, epochMs - Date.now()));
      entry = { timer: setTimeout(() => this.fire(epochMs), ms), items: new Set() };
      entry.timer.unref();
      this.due.set(epochMs, entry);
    }
    entry.items.add(item);
    this.at.set(item, epochMs);
  }

  delete(item: T): void {
    const epochMs = this.at.get(item);
    if (epochMs === undefined) return;
    this.at.delete(item);
    const entry = this.due.get(epochMs);
    if (!entry) return;
    entry.items.delete(item);
    if (entry.items.size === 0) {
      clearTimeout(entry.timer);
      this.due.delete(epochMs);
    }
  }

  private fire(epochMs: number): void {
    const entry = this.due.get(epochMs);
    if (!entry) return;
    // A deadline past 2^31-1 ms (24.8 days) is re-armed for the rest.
    if (epochMs > Date.now()) {
      this.due.delete(epochMs);
      for (const item of entry.items) {
        this.at.delete(item);
        this.add(item, epochMs);
      }
      return;
    }
    this.due.delete(epochMs);
    for (const item of entry.items) {
      this.at.delete(item);
      this.expire(item);
    }
  }
}
