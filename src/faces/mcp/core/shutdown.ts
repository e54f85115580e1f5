/** What waiting requests watch so the process can answer them before it closes. */
export class Shutdown {
  private readonly controller = new AbortController();
  private readonly waits = new Set<Promise<unknown>>();

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** Follows a waiting request until it settles. */
  track<T>(wait: Promise<T>): Promise<T> {
    this.waits.add(wait);
    const forget = () => this.waits.delete(wait);
    wait.then(forget, forget);
    return wait;
  }

  /** Tells every waiting request to answer now; resolves once their answers are on their way. */
  async begin(): Promise<void> {
    this.controller.abort();
    await Promise.allSettled([...this.waits]);
    await new Promise((resolve) => setImmediate(resolve)); // the SDK sends a result a tick later
  }
}
