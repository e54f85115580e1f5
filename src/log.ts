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

/** The destinations whose kept lines the process writes as it exits. */
const open = new Set<WeakRef<{ flushSync(): void }>>();

/** Writes every destination's kept lines when the process exits, however it exits. */
function flushOnExit(destination: { flushSync(): void }): void {
  if (open.size === 0)
    process.once('exit', () => {
      for (const ref of open)
        try {
          ref.deref()?.flushSync();
        } catch {
          // stdout closed: nothing can take the lines any more
        }
    });
  open.add(new WeakRef(destination));
}

/**
 * The process's logger at `LOG_LEVEL`. JSON lines on stdout are written in batches: lines wait
 * in a buffer until it holds WRITE_AT_BYTES, or for at most FLUSH_EVERY_MS, and go out in one
 * write, instead of a write per line (a request line and an audit line per request were a
 * sixth of a busy server's time). Each batch is written synchronously, from this thread: a
 * write handed to another thread may still be waiting there when the process exits, and its
 * lines are lost (pino's asynchronous destination loses the batch in flight so). What is kept
 * is written when the process exits, however it exits (`process.exit`, the end of the event
 * loop, an uncaught exception). Like every synchronous log, a stdout that stops taking lines
 * holds the process at its next batch.
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
  const destination = pino.destination({
    dest: 1,
    sync: true,
    minLength: WRITE_AT_BYTES,
    periodicFlush: FLUSH_EVERY_MS,
  });
  flushOnExit(destination);
  return pino({ level }, destination);
}
