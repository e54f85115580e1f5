import type { ExecutionResult } from 'graphql';
import type { EventResults } from './shared-events.js';
import type { Connection } from './ws-socket.js';

/**
 * A `next` payload's JSON by result object. Subscribers that share an event, a document and a
 * viewer share one result object (shared-events.ts) unless a plugin rewrote it for one of them,
 * so this serializes once per distinct result, not once per subscriber. Results are never
 * changed once made, and an entry lives only as long as its result.
 */
const payloads = new WeakMap<ExecutionResult, string>();

/** The payload exactly as graphql-ws's `emit.next` writes it without an `onNext` hook. */
function payloadJson(result: ExecutionResult): string {
  let json = payloads.get(result);
  if (json === undefined) {
    const { errors, ...withoutErrors } = result;
    json = JSON.stringify({
      ...withoutErrors,
      ...(errors ? { errors: errors.map((e) => e.toJSON()) } : {}),
    });
    payloads.set(result, json);
  }
  return json;
}

/** `{"id":…,"type":"next","payload":…}`: byte for byte graphql-ws's `stringifyMessage`. */
export function nextFrame(id: string, result: ExecutionResult): string {
  return `{"id":${JSON.stringify(id)},"type":"next","payload":${payloadJson(result)}}`;
}

/**
 * A subscription's results written to its socket as `next` frames by the subscription itself,
 * handed to graphql-ws in place of the results. graphql-ws iterates it once: the one `next()`
 * writes every result (waiting only while the socket's buffer is full) and
 * resolves at the stream's end, after which graphql-ws sends `complete` as before (in the same
 * write as a final `next`, see `Connection.write`); what the
 * stream throws reaches graphql-ws, which sends `error` as before; a client's `complete` or
 * the socket's close reaches `return()`, after which no frame is written.
 *
 * Given the subscription's own results beneath the plugins' hooks (`raw`, when every hook
 * leaves a result without errors as it is), each such result is pulled from there and
 * written in the same turn as its event, with no promise per subscriber; whatever else comes
 * (a result with errors, a failure, the end) is taken through the hooks, from `results`.
 */
export class FrameWriter implements AsyncIterableIterator<never> {
  private returned = false;
  /** Settles the `next()` under way while results are pulled from `raw`. */
  private settle:
    | ((step: Promise<IteratorResult<never>> | IteratorResult<never>) => void)
    | undefined;
  /** `take`, bound once: what `raw.pull` calls back. */
  private readonly took: (result: ExecutionResult | undefined) => void;

  constructor(
    private readonly results: AsyncIterator<ExecutionResult>,
    private readonly id: string,
    private readonly connection: Connection,
    private readonly raw?: EventResults | undefined,
  ) {
    this.took = this.take.bind(this);
  }

  next(): Promise<IteratorResult<never>> {
    if (!this.raw) return this.writeAll();
    return new Promise((resolve) => {
      this.settle = resolve;
      this.pull();
    });
  }

  async return(): Promise<IteratorResult<never>> {
    this.returned = true;
    await this.results.return?.();
    this.end(DONE);
    return DONE;
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  private async writeAll(): Promise<IteratorResult<never>> {
    for (;;) {
      const step = await this.results.next();
      if (step.done || this.returned) return DONE;
      const written = this.connection.write(nextFrame(this.id, step.value));
      if (written) await written;
    }
  }

  private pull(): void {
    if (this.returned) this.end(DONE);
    else (this.raw as EventResults).pull(this.took);
  }

  /** A result pulled from `raw`, or `undefined`: the next step is to be had from `results`. */
  private take(result: ExecutionResult | undefined): void {
    if (this.returned) this.end(DONE);
    else if (result !== undefined) this.write(result);
    else
      this.end(
        this.results.next().then((step) => {
          if (step.done || this.returned) return DONE;
          // Written, then back to pulling: the `next()` under way goes on.
          return new Promise<IteratorResult<never>>((resolve) => {
            this.settle = resolve;
            this.write(step.value);
          });
        }),
      );
  }

  private write(result: ExecutionResult): void {
    const written = this.connection.write(nextFrame(this.id, result));
    if (written) written.then(() => this.pull());
    else this.pull();
  }

  private end(step: Promise<IteratorResult<never>> | IteratorResult<never>): void {
    const settle = this.settle;
    this.settle = undefined;
    settle?.(step);
  }
}

const DONE: IteratorResult<never> = Object.freeze({ done: true, value: undefined });
