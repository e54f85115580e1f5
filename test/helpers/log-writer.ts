import { createLogger } from '../../src/log.js';

/**
 * A process that logs as the server does (JSON lines on stdout, LOG_LEVEL=info, production)
 * and then ends as `process.argv[2]` says: `exit` (process.exit(3)), `crash` (an uncaught
 * exception), `end` (the event loop runs dry), or `wait` (it stays up, and logs
 * `process.argv[3]` more lines each time it is sent a message over IPC).
 */
const log = createLogger({ logLevel: 'info', production: true });
const how = process.argv[2];
const lines = Number(process.argv[3] ?? 3);
const logLines = (from: number) => {
  for (let i = 0; i < lines; i++) log.info({ n: from + i }, 'line');
};
logLines(0);
if (how === 'exit') process.exit(3);
if (how === 'crash')
  setImmediate(() => {
    throw new Error('crashed on purpose');
  });
if (how === 'wait') {
  let from = lines;
  process.on('message', () => {
    logLines(from);
    from += lines;
  });
}
