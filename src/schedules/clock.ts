/**
 * The time schedules are fired by: when an occurrence is due, and the one timer of a process
 * that waits for the earliest. An embedder (or a test) may give its own, say one that runs
 * faster than the wall clock; every process firing one database's schedules must agree on it.
 */
export interface Clock {
  /** Now, in epoch milliseconds. */
  now(): number;
  /** Calls `fn` once, when the clock reads `at` or later. @returns a function that cancels it */
  at(at: number, fn: () => void): () => void;
}

/** setTimeout's longest delay; a longer wait is taken in several. */
const MAX_TIMEOUT_MS = 2 ** 31 - 1;

/** The wall clock, with timers that keep no process alive. */
export const systemClock: Clock = {
  now: () => Date.now(),
  at(at, fn) {
    let timer: NodeJS.Timeout;
    const arm = () => {
      const wait = Math.max(0, Math.min(at - Date.now(), MAX_TIMEOUT_MS));
      // A long wait is cut up, and a timer may fire a hair early: look again when it fires.
      timer = setTimeout(() => (Date.now() >= at ? fn() : arm()), wait);
      timer.unref();
    };
    arm();
    return () => clearTimeout(timer);
  },
};
