import { defineTaskKind, type TaskKindOptions } from '../../src/tasks/kinds.js';

/** Task kinds, and the pieces of handlers, that several suites register with their test app. */

/**
 * Settles only once `signal` aborts (cancel, expiry, timeout, lost lease, shutdown): rejects
 * with the signal's reason, after handing that reason to `onAbort` (a suite's record of why its
 * handler was stopped).
 */
export function untilAborted(
  signal: AbortSignal,
  onAbort?: (reason: unknown) => void,
): Promise<never> {
  return new Promise<never>((_, reject) =>
    signal.addEventListener(
      'abort',
      () => {
        onAbort?.(signal.reason);
        reject(signal.reason);
      },
      { once: true },
    ),
  );
}

/**
 * Takes any object as input and never finishes on its own: its task stays as it was started
 * until it is cancelled (or expires).
 */
export const hold = defineTaskKind({
  name: 'hold',
  description: 'waits until cancelled',
  inputSchema: { type: 'object' },
  run: ({ signal }) => untilAborted(signal),
});

/** `hold` with some of its options changed: another name, poll interval or input schema. */
export function holdWith(options: Partial<TaskKindOptions<unknown, never>>) {
  return defineTaskKind({ ...hold, ...options });
}
