import { Worker } from 'node:worker_threads';
import { defineTaskKind } from '../tasks/kinds.js';

const WORKER = new URL('./primes-worker.js', import.meta.url);

/** Counts primes up to `limit` in a worker thread; cancel terminates the thread at once. */
export const primes = defineTaskKind<{ limit: number }, { limit: number; count: number }>({
  name: 'primes',
  description:
    'Counts the primes up to `limit` (2..1e9) in a worker thread, with progress; stops promptly on cancel.',
  inputSchema: {
    type: 'object',
    properties: { limit: { type: 'integer', minimum: 2, maximum: 1_000_000_000 } },
    required: ['limit'],
    additionalProperties: false,
  },
  timeoutMs: 600_000,
  run({ input, signal, progress }) {
    signal.throwIfAborted();
    return new Promise((resolve, reject) => {
      const worker = new Worker(WORKER, { workerData: { limit: input.limit } });
      const onAbort = () => {
        void worker.terminate();
        reject(signal.reason);
      };
      signal.addEventListener('abort', onAbort, { once: true });
      worker.on('message', (message: { progress?: number; count?: number }) => {
        if (message.count !== undefined) {
          signal.removeEventListener('abort', onAbort);
          resolve({ limit: input.limit, count: message.count });
        } else if (message.progress !== undefined) {
          progress(message.progress);
        }
      });
      worker.on('error', (err) => {
        signal.removeEventListener('abort', onAbort);
        reject(err);
      });
      worker.on('exit', (code) => {
        if (code !== 0 && !signal.aborted)
          reject(new Error(`prime counter exited with code ${code}`));
      });
    });
  },
});
