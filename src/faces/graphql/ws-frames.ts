import type { ExecutionResult } from 'graphql';
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
 */
export class FrameWriter implements AsyncIterableIterator<never> {
  private returned = false;

  constructor(
    private readonly results: AsyncIterator<ExecutionResult>,
    private readonly id: string,
    private readonly connection: Connection,
  ) {}

  async next(): Promise<IteratorResult<never>> {
    for (;;) {
      const step = await this.results.next();
      if (step.done || this.returned) return { done: true, value: undefined };
      const written = this.connection.write(nextFrame(this.id, step.value));
      if (written) await written;
    }
  }

  async return(): Promise<IteratorResult<never>> {
    this.returned = true;
    await this.results.return?.();
    return { done: true, value: undefined };
  }

  [Symbol.asyncIterator](): this {
    return this;
  }
}
