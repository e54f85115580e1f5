import type { Clock } from '../../src/schedules/clock.js';

/**
 * A clock that moves only when told (`set`), for schedules: a test walks it across
 * occurrences, DST changes and stops instead of waiting for them.
 */
export class ManualClock implements Clock {
  private readonly timers = new Set<{ at: number; fn: () => void }>();

  constructor(private time: number) {}

  now(): number {
    return this.time;
  }

  at(at: number, fn: () => void): () => void {
    const timer = { at, fn };
    this.timers.add(timer);
    if (at <= this.time) queueMicrotask(() => this.ring());
    return () => this.timers.delete(timer);
  }

  /** Moves to `time` (never back) and rings every timer due by then. */
  set(time: number | string | Date): void {
    this.time = Math.max(this.time, new Date(time).getTime());
    this.ring();
  }

  private ring(): void {
    for (const timer of [...this.timers]) {
      if (timer.at > this.time || !this.timers.delete(timer)) continue;
      timer.fn();
    }
  }
}
