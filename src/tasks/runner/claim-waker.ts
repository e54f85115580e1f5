/**
 * When the runner's claim passes run, and whether one is worth sending.
 *
 * A pass runs at once on a wake, or right after the pass in flight (once, however many wakes
 * came meanwhile), and when the earliest delayed task the runner knows of falls due. Two facts
 * decide whether a wake is worth a statement:
 *
 * - **exhausted**: the last claim took fewer tasks than it asked for, so it found every
 *   claimable one, and a task that becomes claimable later announces itself (NOTIFY, a due
 *   time, the backstop, a reconnect: {@link announced}). A handler that returns then claims
 *   nothing: the claim would find nothing, and its statement would come between the outcome's
 *   commit and the frame the task's subscribers are waiting for. One exception: a task that
 *   held a slot of a concurrency key frees it with its outcome, and a task the key held back is
 *   let go only by a claim, so that claim is sent once the outcome is written
 *   ({@link keySlotFreed}).
 * - **refill**: a slot freed since the last claim, so the runner is draining its local queue
 *   and may claim to refill it even with no slot free ({@link refilling}).
 */
export class ClaimWaker {
  /** The pass in flight, if any. */
  pass: Promise<void> | undefined;
  /** The last claim found every claimable task (see the class comment). */
  exhausted = false;
  private refill = false;
  private again = false;
  private stopped = false;
  private dueTimer: NodeJS.Timeout | undefined;
  private dueAt = Number.POSITIVE_INFINITY;

  /** @param claim one claim pass */
  constructor(private readonly claim: () => Promise<void>) {}

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

  /** More tasks may be claimable than the last claim found: claims now. */
  announced(): void {
    this.exhausted = false;
    this.wake();
  }

  /**
   * A running task gave up its slot: its handler returned (`returned`), or it waits for input.
   * A returned handler claims only while there may be more to find (see the class comment).
   */
  slotFreed(returned: boolean): void {
    if (returned && this.exhausted) return;
    this.refill = true;
    this.wake();
  }

  /** A task held to a concurrency key ended: a task its key held back needs a claim to go. */
  keySlotFreed(): void {
    if (!this.exhausted) return; // `slotFreed` already claimed
    this.refill = true;
    this.wake();
  }

  /** A slot promised to an insert came back unused: claims if a task may be waiting for it. */
  slotUnused(): void {
    if (!this.exhausted) this.wake();
  }

  /** A slot freed since the last claim: the queue drains, and a claim may refill it. */
  get refilling(): boolean {
    return this.refill;
  }

  /** A claim is being sent: it refills whatever freed before it. */
  claiming(): void {
    this.refill = false;
  }

  /**
   * A claim asked for `asked` tasks and got `got`: fewer means none is left to find now, unless
   * it left one `waiting` for a free slot (a rate-limited first start), which the next freed
   * slot claims.
   */
  claimed(got: number, asked: number, waiting = false): void {
    this.exhausted = got < asked && !waiting;
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
        this.announced();
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
