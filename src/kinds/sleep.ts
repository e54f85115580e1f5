import { defineTaskKind, TaskFailedError } from '../tasks/kinds.js';

/** Resolves after `ms`, or rejects with the signal's reason once it aborts. */
export function delay(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    signal.throwIfAborted();
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

interface SleepInput {
  ms: number;
  steps?: number;
  fail?: string;
  failTimes?: number;
}

/**
 * Waits `ms`, reporting progress in `steps`; with `fail`, fails for good with that message;
 * with `failTimes: n`, its first n attempts throw an ordinary error, so the task is retried.
 */
export const sleep = defineTaskKind<SleepInput, { sleptMs: number }>({
  name: 'sleep',
  description:
    'Waits `ms` milliseconds, reporting progress in `steps` (default 10); with `fail`, fails for good with HANDLER_ERROR and that message; with `failTimes: n`, its first n attempts fail (and are retried) and a later one succeeds.',
  inputSchema: {
    type: 'object',
    properties: {
      ms: { type: 'integer', minimum: 0, maximum: 3_600_000 },
      steps: { type: 'integer', minimum: 1, maximum: 1000 },
      fail: { type: 'string' },
      failTimes: { type: 'integer', minimum: 0, maximum: 100 },
    },
    required: ['ms'],
    additionalProperties: false,
  },
  timeoutMs: 3_700_000,
  async run({ input, signal, progress, attempt }) {
    const steps = input.steps ?? 10;
    const started = Date.now();
    if (input.ms > 0) {
      for (let step = 1; step <= steps; step++) {
        const until = started + (input.ms * step) / steps;
        // Timers may fire a millisecond early; wait until the clock really got there.
        while (Date.now() < until) await delay(until - Date.now(), signal);
        if (step < steps) progress(step / steps, `step ${step} of ${steps}`);
      }
    }
    signal.throwIfAborted();
    if (input.fail !== undefined) throw new TaskFailedError('HANDLER_ERROR', input.fail);
    if (attempt <= (input.failTimes ?? 0))
      throw new Error(`Attempt ${attempt} failed on purpose (failTimes: ${input.failTimes}).`);
    return { sleptMs: Date.now() - started };
  },
});
