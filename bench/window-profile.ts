import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';

/**
 * A CPU profile of a window the harness chooses (the fan-out's delivery, a drain), for a
 * benchmark child: `profile:start` and `profile:stop` (with `file`) over IPC, each answered
 * once done. With BENCH_ALLOCATIONS=1 in the child's environment, the profile is instead one
 * of allocations (a `.heapprofile`: every sampled allocation, collected or not, by the code
 * that made it), for finding what keeps the collector busy. Installs its own message handler.
 */
const ALLOCATIONS = process.env.BENCH_ALLOCATIONS === '1';

export function answerProfileRequests(): void {
  let inspector: Session | undefined;
  process.on('message', async (message: { type: string; file?: string }) => {
    if (message.type === 'profile:start') {
      inspector = new Session();
      inspector.connect();
      if (ALLOCATIONS) {
        await inspector.post('HeapProfiler.enable');
        await inspector.post('HeapProfiler.startSampling', {
          samplingInterval: 4096,
          includeObjectsCollectedByMajorGC: true,
          includeObjectsCollectedByMinorGC: true,
        } as never);
      } else {
        await inspector.post('Profiler.enable');
        await inspector.post('Profiler.start');
      }
      process.send!({ type: 'profile:start' });
    }
    if (message.type === 'profile:stop' && inspector) {
      const { profile } = ALLOCATIONS
        ? await inspector.post('HeapProfiler.stopSampling')
        : await inspector.post('Profiler.stop');
      inspector.disconnect();
      inspector = undefined;
      writeFileSync(message.file!, JSON.stringify(profile));
      process.send!({ type: 'profile:stop' });
    }
  });
}
