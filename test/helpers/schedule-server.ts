import { type App, createApp } from '../../src/app.js';
import { loadConfig } from '../../src/config/config.js';
import { ManualClock } from './manual-clock.js';

/**
 * The server as `npm start` builds it, in a process of its own, firing schedules by a clock
 * the test moves. It loads its code and waits: the IPC message `{ start: true, now }` builds
 * the app (a process started on a loaded machine is ready in a second, not ten), and
 * `{ now }` sets the clock (epoch ms), so every process over one database reads the same
 * time and a test walks them across occurrences in seconds.
 */
let clock: ManualClock | undefined;
let app: App | undefined;

async function start(now: number): Promise<void> {
  clock = new ManualClock(now);
  app = await createApp({ config: loadConfig(), scheduleClock: clock });
  const url = await app.listen();
  console.log(JSON.stringify({ msg: 'schedule server listening', url, pid: process.pid }));
}

process.on('message', (message: { start?: unknown; now?: unknown }) => {
  if (typeof message?.now !== 'number') return;
  if (message.start === true && !clock) void start(message.now);
  else clock?.set(message.now);
});
process.on('SIGTERM', () => {
  void (app?.stop() ?? Promise.resolve()).then(() => process.exit(0));
});
console.log(JSON.stringify({ msg: 'schedule server loaded', pid: process.pid }));
