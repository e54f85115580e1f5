import pino, { type Logger } from 'pino';
import type { Config } from './config/config.js';

/**
 * A person reading a terminal in development gets one readable line per event (pino-pretty,
 * in pino's transport thread); everything else — pipes, files, containers, production —
 * gets JSON lines.
 */
function readable(production: boolean): boolean {
  return process.stdout.isTTY === true && !production;
}

/** Bytes of lines kept before a write: one write carries a few dozen request lines. */
const WRITE_AT_BYTES = 4_096;
/** The longest a line waits in a quiet process before it is written. */
const FLUSH_EVERY_MS = 100;
/**
 * Most bytes of lines kept while stdout does not take them (a reader that stopped reading):
 * lines past it are dropped, not kept in memory. A second or more of a busy server's lines.
 */
const MAX_BUFFERED_BYTES = 8 * 1024 * 1024;

/**
 * The process's logger at `LOG_LEVEL`. JSON lines on stdout are written asynchronously and in
 * batches: lines wait in a buffer until it holds WRITE_AT_BYTES, or for at most FLUSH_EVERY_MS,
 * and go out in one write, instead of a write per line (a request line and an audit line per
 * request were a sixth of a busy server's time). The buffer is bounded (MAX_BUFFERED_BYTES).
 * What is buffered is written synchronously when the process exits, however it exits
 * (`process.exit`, the end of the event loop, or an uncaught exception: pino's exit handler).
 */
export function createLogger(config: Pick<Config, 'logLevel' | 'production'>): Logger {
  const level = config.logLevel;
  if (readable(config.production))
    return pino({
      level,
      transport: {
        target: 'pino-pretty',
        options: {
          destination: 1,
          singleLine: true,
          translateTime: 'SYS:HH:MM:ss.l',
          ignore: 'pid,hostname',
        },
      },
    });
  return pino(
    { level },
    pino.destination({
      dest: 1,
      sync: false,
      minLength: WRITE_AT_BYTES,
      periodicFlush: FLUSH_EVERY_MS,
      maxLength: MAX_BUFFERED_BYTES,
    }),
  );
}
