import { defineTaskKind, TaskFailedError } from '../tasks/kinds.js';

interface SleepInput {
  ms: number;
  steps?: number;
  fail?: string;
}

/** Waits `ms`, reporting progress in `steps`; with `fail`, fails with that message. */
export const sleep = defineTaskKind<SleepInput, { sleptMs: number }>({
  name: 'sleep',
  description: 'Waits `ms` milliseconds, reporting progress in `steps` (default 10); with `fail`, fails with HANDLER_ERROR and that message.',
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
        const wait = started + (input.ms * step) / steps - Date.now();
        await new Promise<void>((resolve, reject) => {
          const timer = setTimeout(resolve, Math.max(0, wait));
          signal.addEventListener('abort', () => (clearTimeout(timer), reject(signal.reason)), { once: true });
        });
        if (step < steps) progress(step / steps, `step ${step} of ${steps}`);
      }
    }
    signal.throwIfAborted();
    if (input.fail !== undefined) throw new TaskFailedError('HANDLER_ERROR', input.fail);
    return { sleptMs: Date.now() - started };
  },
});
