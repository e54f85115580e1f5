/**
 * A task's run-time limit (`timeout_ms`): a clock that stands still while the task waits for
 * input, so only time spent running counts. Calls `onTimeout` once the limit is used up.
 */
export class TaskTimeout {
  /** Running time used, but for the stretch since `startedAt` while the clock runs. */
  private usedMs: number;
  private startedAt: number | null = null;
  private timer: NodeJS.Timeout | undefined;

  /** @param usedMs running time the attempt's earlier runs used (a durable task's wake-ups) */
  constructor(
    private readonly limitMs: number,
    usedMs: number,
    private readonly onTimeout: () => void,
  ) {
    this.usedMs = usedMs;
  }

  /** Starts the clock, or restarts it with what was left at `pause`. */
  start(): void {
    clearTimeout(this.timer);
    this.startedAt = Date.now();
    this.timer = setTimeout(() => this.onTimeout(), Math.max(0, this.limitMs - this.usedMs));
  }

  /** Stops the clock and keeps the time left. */
  pause(): void {
    clearTimeout(this.timer);
    this.usedMs = this.used();
    this.startedAt = null;
  }

  /** The running time used so far, earlier runs' included. */
  used(): number {
    return this.usedMs + (this.startedAt === null ? 0 : Date.now() - this.startedAt);
  }

  /** Stops the clock for good. */
  clear(): void {
    clearTimeout(this.timer);
  }
}
