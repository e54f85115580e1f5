import { writeHeapSnapshot } from 'node:v8';
import { loadConfig } from '../src/config/config.js';
import { createLogger } from '../src/log.js';
import { defineTaskKind } from '../src/tasks/kinds.js';
import { startTracing } from '../src/tracing/start.js';
import { answerProfileRequests } from './window-profile.js';

/**
 * The server under benchmark: what `src/main.ts` builds, from the same environment, plus a
 * `noop` kind (the drain benchmark's unit of work) and an IPC channel for the harness to ask
 * for memory after a full collection (start with `node --expose-gc`).
 */
const noop = defineTaskKind({
  name: 'noop',
  description: 'Does nothing (benchmark).',
  inputSchema: { type: 'object' },
  async run() {
    return null;
  },
});

const config = loadConfig();
const log = createLogger(config);
// As main does: tracing first when OTEL_* asks (the tracing row), then the app's modules.
const tracing = await startTracing(config.tracing);
// BENCH_TIMELINE=1: marks along the event path, for bench/event-timeline.ts.
const timeline = process.env.BENCH_TIMELINE === '1' ? await import('./timeline.js') : undefined;
const { createApp } = await import('../src/app.js');
// BENCH_YOGA_ONLY=1: a plugin with a request hook, so every request goes through yoga's own
// HTTP layer (the direct POST path steps aside): the A/B row of the accept and poll sections.
const yogaOnly = process.env.BENCH_YOGA_ONLY === '1' ? [{ onRequest() {} }] : [];
const app = await createApp({ config, log, kinds: [noop], graphqlPlugins: yogaOnly });
const url = await app.listen();

function memory() {
  const gc = (globalThis as { gc?: () => void }).gc;
  gc?.();
  gc?.();
  const { rss, heapUsed, external, arrayBuffers } = process.memoryUsage();
  return { rss, heapUsed, external, arrayBuffers };
}

// A CPU profile of a window the harness chooses: the fan-out's delivery, say.
answerProfileRequests();

process.on('message', async (message: { type: string; file?: string }) => {
  if (message.type === 'memory') process.send!({ type: 'memory', ...memory() });
  if (message.type === 'cpu') process.send!({ type: 'cpu', ...process.cpuUsage() });
  if (message.type === 'heap')
    process.send!({ type: 'heap', file: writeHeapSnapshot(message.file) });
  if (message.type === 'cache') process.send!({ type: 'cache', ...app.events.cacheStats });
  if (message.type === 'timeline')
    process.send!({ type: 'timeline', marks: timeline?.takeMarks() ?? [] });
  if (message.type === 'stop')
    void app
      .stop()
      .then(() => tracing?.shutdown())
      .then(() => process.exit(0));
});
process.on(
  'SIGTERM',
  () =>
    void app
      .stop()
      .then(() => tracing?.shutdown())
      .then(() => process.exit(0)),
);
process.send!({ type: 'listening', url });
