import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Level, Logger } from 'pino';
import type { TokenVerifier } from '../auth/tokens.js';
import { routeOf } from './route-name.js';

/** Probes ask every few seconds; their lines would drown the rest at info. */
const PROBES = new Set(['/healthz', '/readyz', '/metrics']);

/**
 * One line per request once it is answered: method, route, path, status, `responseTime` in
 * ms, the principal and `reqId` (also sent as `x-request-id`). Headers and the query string
 * are never logged, so no token is; the principal is the subject of a token this request
 * already had verified (looked up, never verified again). Probes log at debug; a `503` at warn:
 * it is an answer the server meant (the database unreachable or read-only, a stop under way),
 * whose cause is logged once per episode, and a failover's window must not page anyone once
 * per request. Other server errors, and requests whose connection closed before the answer
 * was sent, log at error.
 *
 * Written here rather than with pino-http: that builds two child loggers per request, which
 * on a poll cost as much as the rest of the line; this builds the line once, and not at all
 * when its level is off.
 */
export function requestLogger(log: Logger, verifier: TokenVerifier) {
  return (req: IncomingMessage, res: ServerResponse) => {
    const started = performance.now();
    const reqId = randomUUID();
    res.setHeader('x-request-id', reqId);
    res.once('close', () => {
      const path = (req.url ?? '/').split('?')[0]!;
      const answered = res.writableFinished;
      const level = levelOf(answered, res.statusCode, path);
      if (!log.isLevelEnabled(level)) return;
      log[level](
        {
          reqId,
          req: { method: req.method, path },
          res: { statusCode: res.statusCode },
          route: routeOf(req.url, res.statusCode),
          principal: verifier.subjectOf(req.headers.authorization) ?? null,
          responseTime: Math.round((performance.now() - started) * 100) / 100,
        },
        answered ? 'request' : 'request aborted',
      );
    });
  };
}

/** The level of a request's line (see `requestLogger`). */
function levelOf(answered: boolean, status: number, path: string): Level {
  if (!answered) return 'error';
  if (status === 503) return 'warn';
  if (status >= 500) return 'error';
  return PROBES.has(path) ? 'debug' : 'info';
}
