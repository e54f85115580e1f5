import { defineTaskKind, TaskFailedError } from '../tasks/kinds.js';

function delay(ms: number, signal: AbortSignal): Promise<void> {
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
}

/** Waits `ms`, reporting progress in `steps`; with `fail`, fails with that message. */
export const sleep = defineTaskKind<SleepInput, { sleptMs: number }>({
  name: 'sleep',
  description:
    'Waits `ms` milliseconds, reporting progress in `steps` (default 10); with `fail`, fails with HANDLER_ERROR and that message.',
  inputSchema: {
    type: 'object',
    properties: {
      ms: { type: 'integer', minimum: 0, maximum: 3_600_000 },
      steps: { type: 'integer', minimum: 1, maximum: 1000 },
      fail: { type: 'string' },
    },
    required: ['ms'],
    additionalProperties: false,
  },
  timeoutMs: 3_700_000,
  async run({ input, signal, progress }) {
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
    return { sleptMs: Date.now() - started };
  },
});
