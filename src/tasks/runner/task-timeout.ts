/**
 * A task's run-time limit (`timeout_ms`): a clock that stands still while the task waits for
 * input, so only time spent running counts. Calls `onTimeout` once the limit is used up.
 */
export class TaskTimeout {
  private leftMs: number;
  private startedAt = Date.now();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    limitMs: number,
    private readonly onTimeout: () => void,
  ) {
    this.leftMs = limitMs;
  }

  /** Starts the clock, or restarts it with what was left at `pause`. */
  start(): void {
    this.startedAt = Date.now();
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.onTimeout(), Math.max(0, this.leftMs));
  }

  /** Stops the clock and keeps the time left. */
  pause(): void {
    clearTimeout(this.timer);
    this.leftMs -= Date.now() - this.startedAt;
  }

  /** Stops the clock for good. */
  clear(): void {
    clearTimeout(this.timer);
  }
}
