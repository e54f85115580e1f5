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

/**
 * The process's logger at `LOG_LEVEL`. JSON lines on stdout are written asynchronously:
 * under load those that queue behind a write in flight go out together in the next one,
 * instead of one blocking write per line on the event loop (a request line and an audit
 * line per request were a sixth of a busy server's time). pino flushes what is queued on
 * exit, `process.exit` included.
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
  return pino({ level }, pino.destination({ dest: 1, sync: false }));
}
