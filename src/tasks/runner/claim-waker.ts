/**
 * When the runner's claim passes run: at once on a wake, or right after the pass in flight
 * (once, however many wakes came meanwhile); and when the earliest delayed task the runner
 * knows of falls due.
 */
export class ClaimWaker {
  /** The pass in flight, if any. */
  pass: Promise<void> | undefined;
  private again = false;
  private stopped = false;
  private dueTimer: NodeJS.Timeout | undefined;
  private dueAt = Number.POSITIVE_INFINITY;

  /**
   * @param claim one claim pass
   * @param due called when a delayed task falls due (the runner then wakes, told of news)
   */
  constructor(
    private readonly claim: () => Promise<void>,
    private readonly due: () => void,
  ) {}

  /** Starts a claim pass now (or right after the one in progress). */
  wake(): void {
    if (this.stopped) return;
    if (this.pass) {
      this.again = true;
      return;
    }
    this.pass = this.claim().finally(() => {
      this.pass = undefined;
      if (this.again) {
        this.again = false;
        this.wake();
      }
    });
  }

  /**
   * Claims again at `at` (epoch ms), when a delayed task falls due, unless a wake for an
   * earlier time is already set. A little after it: the claim compares with Postgres's clock.
   */
  wakeAt(at: number): void {
    if (this.stopped || at >= this.dueAt) return;
    clearTimeout(this.dueTimer);
    this.dueAt = at;
    this.dueTimer = setTimeout(
      () => {
        this.dueAt = Number.POSITIVE_INFINITY;
        this.due();
      },
      Math.min(2 ** 31 - 1, Math.max(5, at - Date.now() + 5)),
    );
  }

  /** No pass starts from now on; the one in flight, if any, is `pass`. */
  stop(): void {
    this.stopped = true;
    clearTimeout(this.dueTimer);
  }
}
