import { getOperationAST } from 'graphql';
import type { Plugin } from 'graphql-yoga';

/** What the GraphQL face reports to whoever measures it (src/metrics/metrics.ts). */
export interface GraphQLObserver {
  /** A query or mutation ended, or a subscription was set up. */
  operation(operation: string, type: string, ok: boolean, seconds: number): void;
  subscriptionOpened(): void;
  subscriptionClosed(): void;
}

/**
 * Operation names are the client's to choose: beyond this many distinct ones, the rest count
 * as `other`, so no client can grow the number of series without bound.
 */
const MAX_NAMES = 200;

/**
 * Times every operation executed through envelop — the direct POST path, yoga's own and the
 * WebSocket face alike — by operation name and type, and counts open subscriptions.
 */
export function useOperationMetrics(observer: GraphQLObserver): Plugin {
  const names = new Set<string>();
  const nameOf = (name: string | undefined): string => {
    if (name === undefined) return 'anonymous';
    if (names.has(name)) return name;
    if (names.size >= MAX_NAMES) return 'other';
    names.add(name);
    return name;
  };
  const describe = (args: {
    document: Parameters<typeof getOperationAST>[0];
    operationName?: string | null | undefined;
  }) => {
    const operation = getOperationAST(args.document, args.operationName ?? undefined);
    return { name: nameOf(operation?.name?.value), type: operation?.operation ?? 'unknown' };
  };
  return {
    onExecute({ args }) {
      const started = performance.now();
      const { name, type } = describe(args);
      return {
        onExecuteDone({ result }) {
          const ok = !('errors' in result && result.errors?.length);
          observer.operation(name, type, ok, (performance.now() - started) / 1000);
        },
      };
    },
    onSubscribe({ args }) {
      const started = performance.now();
      const { name } = describe(args);
      return {
        onSubscribeResult({ result }) {
          const iterable = Symbol.asyncIterator in result;
          const ok = iterable || !result.errors?.length;
          observer.operation(name, 'subscription', ok, (performance.now() - started) / 1000);
          if (!iterable) return;
          observer.subscriptionOpened();
          return { onEnd: () => observer.subscriptionClosed() };
        },
        onSubscribeError() {
          observer.operation(name, 'subscription', false, (performance.now() - started) / 1000);
        },
      };
    },
  };
}
