import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { coerceError, ServiceError } from '../../errors.js';
import { PayloadTooLarge, readBody } from '../../http/body.js';
import { sendJson, sendProblem } from '../../http/problem.js';
import {
  HttpRefusal,
  requireJsonType,
  sendMethodNotAllowed,
  sendRefusal,
} from '../../http/refusal.js';
import type { TaskService } from '../../tasks/service.js';

/**
 * `POST /v1/signals/{token}` (DESIGN §16): a signal URL minted by `ctx.signalUrl`, for an
 * outside system without a bearer token. The body is the payload (any JSON). `202` with
 * `{ "received": true }` and nothing of the task; a token unknown, used up or whose task ended
 * is the same `404`.
 */
export function createSignalUrlHandler(options: { tasks: TaskService; log: Logger }) {
  const { tasks, log } = options;
  return async function signalUrl(req: IncomingMessage, res: ServerResponse): Promise<boolean> {
    const target = req.url?.startsWith('/') ? req.url : '/';
    const { pathname } = new URL(`http://localhost${target}`);
    if (!pathname.startsWith('/v1/signals/')) return false;
    try {
      const parts = pathname.split('/').filter(Boolean);
      if (parts.length !== 3) {
        sendProblem(res, 404, 'NOT_FOUND', 'No such route.');
        return true;
      }
      if (req.method !== 'POST') {
        sendMethodNotAllowed(res, 'POST', 'Use POST.');
        return true;
      }
      requireJsonType(req, 'The body must be application/json.');
      let payload: unknown;
      try {
        const text = (await readBody(req)).toString('utf8');
        payload = text.trim() === '' ? null : JSON.parse(text);
      } catch (err) {
        if (err instanceof PayloadTooLarge) throw err;
        throw new HttpRefusal(400, 'BAD_USER_INPUT', 'The body is not valid JSON.');
      }
      const { first } = await tasks.signalByUrl(parts[2]!, payload);
      sendJson(res, 202, { received: true, first });
    } catch (err) {
      if (err instanceof PayloadTooLarge) throw err;
      if (err instanceof ServiceError) sendRefusal(res, err);
      else {
        log.error(
          { err: coerceError(err), path: '/v1/signals/…' },
          'unexpected error in a signal URL',
        );
        if (!res.headersSent) sendProblem(res, 500, 'INTERNAL_SERVER_ERROR', 'Unexpected error.');
      }
    }
    return true;
  };
}
