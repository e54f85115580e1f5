import { run, runMigrations } from 'graphile-worker';
import { answerProfileRequests } from './window-profile.js';

/**
 * graphile-worker executing no-op jobs: the drain benchmark's reference, in a process of its
 * own like our worker. `GW_CONCURRENCY` jobs at once. `GW_BATCHED=1` configures it for
 * throughput as its documentation's performance page does (worker.graphile.org/docs/performance:
 * `localQueue: { size: 500 }`, `completeJobBatchDelay: 0`, `failJobBatchDelay: 0`, prepared
 * statements on), all under `preset.worker`: in 0.17 these options are read from the preset
 * only; given to `run()` beside `connectionString` they are dropped with a warning. Its options
 * as resolved (the preset merged over its defaults) are sent to the harness, which prints them.
 */
const connectionString = process.env.DATABASE_URL!;
const concurrency = Number(process.env.GW_CONCURRENCY ?? 8);
const batched = process.env.GW_BATCHED === '1';
const localQueueSize = Number(process.env.GW_LOCAL_QUEUE ?? 500);

let resolved: Record<string, unknown> = {};
/** Reads the options graphile-worker resolved, as its own `init` middleware sees them. */
const capture = {
  name: 'BenchCaptureResolvedOptions',
  version: '0.0.0',
  worker: {
    middleware: {
      init(next: () => unknown, event: { ctx: { resolvedPreset: { worker: object } } }) {
        resolved = { ...event.ctx.resolvedPreset.worker };
        return next();
      },
    },
  },
};

await runMigrations({ connectionString });
const runner = await run({
  noHandleSignals: true,
  taskList: { noop: async () => {} },
  preset: {
    plugins: [capture as never],
    worker: {
      connectionString,
      concurrentJobs: concurrency,
      pollInterval: 2_000,
      preparedStatements: true,
      ...(batched
        ? {
            localQueue: { size: localQueueSize },
            completeJobBatchDelay: 0,
            failJobBatchDelay: 0,
          }
        : {}),
    },
  },
});

/** The options that bear on throughput, as graphile-worker resolved them. */
const options = Object.fromEntries(
  [
    'concurrentJobs',
    'maxPoolSize',
    'pollInterval',
    'preparedStatements',
    'localQueue',
    'completeJobBatchDelay',
    'failJobBatchDelay',
    'useNodeTime',
  ].map((key) => [key, resolved[key] ?? null]),
);
answerProfileRequests();
process.send!({ type: 'listening', url: '', options });
process.on('message', (message: { type: string }) => {
  if (message.type === 'options') process.send!({ type: 'options', options });
  if (message.type === 'cpu') process.send!({ type: 'cpu', ...process.cpuUsage() });
  if (message.type === 'stop') void runner.stop().then(() => process.exit(0));
});
process.on('SIGTERM', () => void runner.stop().then(() => process.exit(0)));
