import type { Plugin } from 'graphql-yoga';

/**
 * Which plugin hooks the direct POST path (fast-post.ts) honours. It runs envelop's own per
 * operation — `getEnveloped`, then parse, validate, context and execute — and answers on the
 * node response, skipping yoga's HTTP pipeline around them. Each hook a yoga plugin can have
 * is listed here with what becomes of it:
 * - `runs`: the direct path runs it, as yoga would;
 * - `yoga`: only for what the direct path hands to yoga anyway (a subscription);
 * - `once`: not per request (yoga's building and disposal), so no path skips it;
 * - `off`: the direct path would skip it, so a plugin with it turns the path off for good.
 * A key this table does not know turns the path off too: a hook a new yoga adds is never
 * skipped silently, and test/faces/graphql/direct-hooks.test.ts fails until it is listed.
 * The table is for an embedder's plugins; of the server's own, the one with a hook marked `off`
 * here, persisted operations' `onParams`, is run by the direct path itself (persisted.ts).
 */
export const DIRECT_PATH_HOOKS = {
  onEnveloped: 'runs',
  onParse: 'runs',
  onValidate: 'runs',
  onContextBuilding: 'runs',
  onExecute: 'runs',
  onSubscribe: 'yoga',
  onYogaInit: 'once',
  onSchemaChange: 'once',
  onDispose: 'once',
  onRequest: 'off',
  onRequestParse: 'off',
  onParams: 'off',
  onExecutionResult: 'off',
  onResultProcess: 'off',
  onResponse: 'off',
  // It may add any hook, so none of its plugin's can be vouched for.
  onPluginInit: 'off',
  instrumentation: 'off',
} as const satisfies Record<string, 'runs' | 'yoga' | 'once' | 'off'>;

/**
 * Whether requests may take the direct POST path with these plugins: only when every hook of
 * every one of them is one the path honours (`DIRECT_PATH_HOOKS`), so no plugin an embedder
 * adds is ever skipped.
 */
export function servedDirectly(plugins: readonly Plugin<any, any, any>[] = []): boolean {
  return plugins.every((plugin) =>
    Object.keys(plugin).every((hook) => {
      const fate = (DIRECT_PATH_HOOKS as Record<string, string>)[hook];
      return fate !== undefined && fate !== 'off';
    }),
  );
}

/** Hooks that may change a subscription's results, or add or wrap hooks that do. */
const RESULT_HOOKS = new Set(['onSubscribe', 'onPluginInit', 'instrumentation']);

/**
 * Whether these plugins leave a subscription's results as they come: the WebSocket face may
 * then write a result without errors from beneath the hooks, which leave such a result as it
 * is (ws-frames.ts). Only when none of them hooks subscriptions, adds or wraps hooks, or has a
 * hook `DIRECT_PATH_HOOKS` does not know. The server's own plugins (yoga's error masking, the
 * metrics' count of open subscriptions, the HTTP rules) act on errors and ends only; what else
 * they do goes through the hooks as before (test/faces/graphql/ws-pulled.test.ts).
 */
export function resultsUntouched(plugins: readonly Plugin<any, any, any>[] = []): boolean {
  return plugins.every((plugin) =>
    Object.keys(plugin).every((hook) => hook in DIRECT_PATH_HOOKS && !RESULT_HOOKS.has(hook)),
  );
}
