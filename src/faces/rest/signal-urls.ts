import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { readJson } from '../../http/json-body.js';
import { answerThrown } from '../../http/last-catch.js';
import { sendJson, sendProblem } from '../../http/problem.js';
import { HttpRefusal, sendMethodNotAllowed } from '../../http/refusal.js';
import type { TaskService } from '../../tasks/service.js';

/**
 * `POST /v1/signals/{token}` (DESIGN §16): a signal URL minted by `ctx.signalUrl`, for an
 * outside system without a bearer token. The body is the payload (any JSON; none reads as
 * null). `202` with `{ "received": true, "first" }` and nothing of the task; a token unknown,
 * used up or whose task ended is the same `404`. The token is a credential: it is never
 * logged.
 */
export function createSignalUrlHandler(options: { tasks: TaskService; log: Logger }) {
  const { tasks, log } = options;

  async function serve(req: IncomingMessage, res: ServerResponse, parts: string[]) {
    if (parts.length !== 3) return sendProblem(res, 404, 'NOT_FOUND', 'No such route.');
    if (req.method !== 'POST') return sendMethodNotAllowed(res, 'POST', 'Use POST.');
    const body = await readJson(req, { empty: null });
    if (!body.ok) throw new HttpRefusal(400, 'BAD_USER_INPUT', 'The body is not valid JSON.');
    const { first } = await tasks.signalByUrl(parts[2]!, body.value);
    sendJson(res, 202, { received: true, first });
  }

  return async function signalUrl(req: IncomingMessage, res: ServerResponse): Promise<boolean> {
    const target = req.url?.startsWith('/') ? req.url : '/';
    const { pathname } = new URL(`http://localhost${target}`);
    if (!pathname.startsWith('/v1/signals/')) return false;
    try {
      await serve(req, res, pathname.split('/').filter(Boolean));
    } catch (err) {
      answerThrown(req, res, err, {
        log,
        where: 'a signal URL',
        context: { path: '/v1/signals/…' },
      });
    }
    return true;
  };
}
