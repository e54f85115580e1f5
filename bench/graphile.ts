import { run, runMigrations } from 'graphile-worker';

/**
 * graphile-worker executing no-op jobs: the drain benchmark's reference, in a process of its
 * own like our worker. `GW_CONCURRENCY` jobs at once; `GW_BATCHED=1` turns on its batching
 * (local queue, batched completions), which is off by default.
 */
const connectionString = process.env.DATABASE_URL!;
const concurrency = Number(process.env.GW_CONCURRENCY ?? 8);
const batched = process.env.GW_BATCHED === '1';

await runMigrations({ connectionString });
const runner = await run({
  connectionString,
  concurrency,
  noHandleSignals: true,
  pollInterval: 2_000,
  taskList: { noop: async () => {} },
  ...(batched
    ? { preset: { worker: { localQueue: { size: 4 * concurrency }, completeJobBatchDelay: 0 } } }
    : {}),
});
process.send!({ type: 'listening', url: '' });
process.on('message', (message: { type: string }) => {
  if (message.type === 'stop') void runner.stop().then(() => process.exit(0));
});
process.on('SIGTERM', () => void runner.stop().then(() => process.exit(0)));
