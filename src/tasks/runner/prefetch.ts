/**
 * Under a backlog the prefetch grows until the local queue holds about this much work (by the
 * handlers' recent run time): enough for a claim of many tasks to be cheap a task, little
 * enough that a worker never sits on more than a moment's work another worker could be doing.
 */
const QUEUED_WORK_MS = 100;
/** The most tasks a grown prefetch takes ahead of free slots. */
const MAX_PREFETCH = 1_000;

/**
 * How many tasks the runner claims ahead of its free slots (see `LocalQueue`): the configured
 * prefetch, or more under a backlog. A claim that came back full leaves more waiting: the next
 * takes twice the prefetch, until the queue would hold QUEUED_WORK_MS of work at the handlers'
 * recent pace (MAX_PREFETCH at most). One that found fewer than it asked for found all there
 * were: back to the configured prefetch. So a backlog of quick tasks is claimed hundreds at a
 * time (a claim of 500 costs Postgres about half of what 32 do, a task), while a worker of slow
 * tasks keeps the prefetch it was given. A prefetch of 0 (claims for free slots only) never
 * grows.
 */
export class Prefetch {
  /** Tasks to claim ahead of free slots now. */
  now: number;
  /** The handlers' recent run time, ms (a moving average). */
  private runMs = Number.POSITIVE_INFINITY;

  constructor(
    /** The configured prefetch (RUNNER_PREFETCH). */
    private readonly base: number,
    private readonly concurrency: number,
  ) {
    this.now = base;
  }

  /** A handler returned after `ms`. */
  ran(ms: number): void {
    this.runMs = Number.isFinite(this.runMs) ? 0.9 * this.runMs + 0.1 * ms : ms;
  }

  /** A claim came back: `full` when it took all it asked for. */
  claimed(full: boolean): void {
    if (!full || this.base === 0) {
      this.now = this.base;
      return;
    }
    const worth = Math.floor((this.concurrency * QUEUED_WORK_MS) / Math.max(this.runMs, 0.01));
    this.now = Math.min(Math.min(MAX_PREFETCH, Math.max(this.base, worth)), this.now * 2);
  }
}
