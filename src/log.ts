import pino, { type Logger } from 'pino';
import type { Config } from './config.js';

/**
 * A person reading a terminal in development gets one readable line per event (pino-pretty,
 * in pino's transport thread); everything else — pipes, files, containers, production —
 * gets JSON lines.
 */
function readable(production: boolean): boolean {
  return process.stdout.isTTY === true && !production;
}

/** JSON lines gathered before one write to stdout. */
const LOG_BUFFER_BYTES = 4096;
/** The longest a line waits for others before it is written. */
const LOG_FLUSH_MS = 100;

/**
 * stdout for JSON lines, written in batches: a write of its own for each line cost a busy
 * worker an eighth of its time (a hop to libuv's thread pool and back per line). Lines
 * gather up to LOG_BUFFER_BYTES, and none waits more than LOG_FLUSH_MS: the first line after
 * a flush arms one timer, so an idle process sets none. What is still gathered when the
 * process exits, `process.exit` and a crash included, pino writes synchronously then.
 */
class BatchedStdout {
  private readonly sonic = pino.destination({ dest: 1, sync: false, minLength: LOG_BUFFER_BYTES });
  private timer: NodeJS.Timeout | undefined;

  write(line: string): void {
    this.sonic.write(line);
    if (this.timer !== undefined) return;
    this.timer = setTimeout(flushLater, LOG_FLUSH_MS, this);
    this.timer.unref();
  }

  /** Writes what is gathered now (pino's `logger.flush`). */
  flush(done?: (err?: Error) => void): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.sonic.flush(done);
  }
}

function flushLater(stdout: BatchedStdout): void {
  stdout.flush();
}

/** The process's logger at `LOG_LEVEL`: JSON lines on stdout, batched (see BatchedStdout). */
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
  return pino({ level }, new BatchedStdout());
}
