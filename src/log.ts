import pino, { type Logger } from 'pino';

/**
 * The process's logger: JSON lines on stdout at `level`. Lines are written asynchronously:
 * under load those that queue behind a write in flight go out together in the next one,
 * instead of one blocking write per line on the event loop (a request line and an audit
 * line per request were a sixth of a busy server's time). pino flushes what is queued on
 * exit, `process.exit` included.
 */
export function createLogger(level: string): Logger {
  return pino({ level }, pino.destination({ dest: 1, sync: false }));
}
