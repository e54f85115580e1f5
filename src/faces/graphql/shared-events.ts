import {
  createSourceEventStream,
  type DocumentNode,
  type ExecutionArgs,
  type ExecutionResult,
  execute,
} from 'graphql';
import { isAsyncIterable, type Plugin } from 'graphql-yoga';
import type { Pullable } from '../../tasks/events/subscription.js';
import type { Context } from './builder.js';

type Results = Map<DocumentNode, Map<string, ExecutionResult | Promise<ExecutionResult>>>;

/** Each subscription's own results, by the operation's context object (one per operation). */
const byContext = new WeakMap<object, EventResults>();

/**
 * The results of the subscription whose context this is, as `useSharedEventResults` made them
 * and before any plugin's hooks, when they can be pulled (see `EventResults.pull`).
 */
export function pullableResults(context: unknown): EventResults | undefined {
  if (typeof context !== 'object' || context === null) return undefined;
  const results = byContext.get(context);
  return results?.pullable ? results : undefined;
}

/**
 * Executes each subscription event once per distinct viewer instead of once per subscriber.
 * A task's change reaches every local subscriber of that task as one shared event object (the
 * hub reads the row once and `subscribeToTask` converts it once); subscribers that sent the
 * same document, operation and variables with the same principal and scopes would compute the
 * same result, so the first computes it and the others reuse it. What a result may depend on
 * (the schema's field authorization reads only the principal's subject and scopes) is the key;
 * results are held only as long as their event object lives.
 *
 * Only the per-event execution changes: subscribing (and its authorization), error masking and
 * every other plugin's hooks on subscription results apply as before.
 */
export function useSharedEventResults(): Plugin<Context> {
  const byEvent = new WeakMap<object, Results>();
  const resultOf = (args: ExecutionArgs, viewer: string | undefined, event: unknown) => {
    if (typeof event !== 'object' || event === null || viewer === undefined)
      return execute({ ...args, rootValue: event });
    let perDocument = byEvent.get(event);
    if (!perDocument) {
      perDocument = new Map();
      byEvent.set(event, perDocument);
    }
    let perViewer = perDocument.get(args.document);
    if (!perViewer) {
      perViewer = new Map();
      perDocument.set(args.document, perViewer);
    }
    let result = perViewer.get(viewer);
    if (!result) {
      result = execute({ ...args, rootValue: event });
      perViewer.set(viewer, result);
    }
    return result;
  };
  // One function for every subscription: what envelop holds per subscriber stays small.
  const subscribe = async (args: ExecutionArgs) => {
    const source = await createSourceEventStream(args);
    if (!isAsyncIterable(source)) return source;
    const results = new EventResults(
      source[Symbol.asyncIterator](),
      args,
      viewerKey(args),
      resultOf,
    );
    if (typeof args.contextValue === 'object' && args.contextValue !== null)
      byContext.set(args.contextValue, results);
    return results;
  };
  return {
    onSubscribe({ setSubscribeFn }) {
      setSubscribeFn(subscribe);
    },
  };
}

type ResultOf = (
  args: ExecutionArgs,
  viewer: string | undefined,
  event: unknown,
) => ExecutionResult | Promise<ExecutionResult>;

/**
 * One subscriber's results: each event's, as `resultOf` gives it. What graphql-yoga's
 * `mapAsyncIterator` does here, in one object per subscriber instead of seven closures: a
 * failing execution closes the event stream and rethrows.
 */
export class EventResults implements AsyncIterableIterator<ExecutionResult> {
  /** A step `pull` did not hand on, for the next `next()`. */
  private held: (() => Promise<IteratorResult<ExecutionResult>>) | undefined;

  constructor(
    private readonly events: AsyncIterator<unknown> & Partial<Pullable<unknown>>,
    private readonly args: ExecutionArgs,
    private readonly viewer: string | undefined,
    private readonly resultOf: ResultOf,
  ) {}

  /** Whether the event stream beneath can be pulled (src/tasks/events/subscription.ts). */
  get pullable(): boolean {
    return typeof this.events.pull === 'function';
  }

  /**
   * The next result without a promise, when it has no errors: `take(result)`, at once if the
   * event is there. Anything else — a result with errors, a failed execution, the stream's
   * end — is held for the next `next()`, and `take(undefined)` says so: what the plugins'
   * hooks on results do (masking errors, counting a stream's end) they do through `next()`,
   * while a result without errors, which they leave as it is, needs none of them.
   */
  pull(take: (result: ExecutionResult | undefined) => void): void {
    (this.events as Pullable<unknown>).pull((step) => {
      if (step.done) return this.hold(() => Promise.resolve(step), take);
      let result: ExecutionResult | Promise<ExecutionResult>;
      try {
        result = this.resultOf(this.args, this.viewer, step.value);
      } catch (err) {
        return this.hold(() => this.close(err), take);
      }
      if (!(result instanceof Promise)) return this.hand(result, take);
      result.then(
        (value) => this.hand(value, take),
        (err: unknown) => this.hold(() => this.close(err), take),
      );
    });
  }

  private hand(result: ExecutionResult, take: (result: ExecutionResult | undefined) => void) {
    if (result.errors === undefined) take(result);
    else this.hold(() => Promise.resolve(nextResult(result)), take);
  }

  private hold(
    step: () => Promise<IteratorResult<ExecutionResult>>,
    take: (result: ExecutionResult | undefined) => void,
  ) {
    this.held = step;
    take(undefined);
  }

  // A promise chain, not an async function: an idle subscriber waits here, and a suspended
  // async function holds several times what one pending callback does.
  next(): Promise<IteratorResult<ExecutionResult>> {
    const held = this.held;
    if (held) {
      this.held = undefined;
      return held();
    }
    return this.events.next().then((step) => {
      if (step.done) return step;
      try {
        const result = this.resultOf(this.args, this.viewer, step.value);
        return result instanceof Promise
          ? result.then(nextResult, (err: unknown) => this.close(err))
          : nextResult(result);
      } catch (err) {
        return this.close(err);
      }
    });
  }

  async return(): Promise<IteratorResult<ExecutionResult>> {
    this.held = undefined;
    await this.events.return?.();
    return { done: true, value: undefined };
  }

  async throw(err: unknown): Promise<IteratorResult<ExecutionResult>> {
    return this.close(err);
  }

  /** Closes the event stream and rethrows what failed (not what closing it threw). */
  private async close(err: unknown): Promise<never> {
    await this.events.return?.().then(undefined, () => undefined);
    throw err;
  }

  [Symbol.asyncIterator](): this {
    return this;
  }
}

const nextResult = (value: ExecutionResult): IteratorResult<ExecutionResult> => ({
  done: false,
  value,
});

/** Everything besides the event a result depends on; undefined: not shareable. */
function viewerKey(args: ExecutionArgs): string | undefined {
  const principal = (args.contextValue as Partial<Context> | undefined)?.principal;
  if (!principal) return undefined;
  let variables: string;
  try {
    variables = JSON.stringify(args.variableValues ?? null);
  } catch {
    return undefined;
  }
  return `${principal.sub}\n${[...principal.scopes].sort().join(' ')}\n${args.operationName ?? ''}\n${variables}`;
}
