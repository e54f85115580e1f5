import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { sendJson, sendProblem } from './problem.js';

/**
 * The 413 of every route (DESIGN §12), sent the moment a body is known to be too large (its
 * declared length, or the count of its chunks), followed by a lingering close (RFC 9112 §9.6):
 * the answer goes out with `Connection: close` and a FIN, and what the client still sends is
 * read and dropped for a bounded while. Most clients (fetch, curl, every SDK here) write the
 * whole body before they read: a close with unread bytes is a reset, which can discard the
 * answer before they read it. Past the bounds the socket is closed whatever remains.
 */

/** At most this much of a refused body is read and dropped. */
const LINGER_BYTES = 64 * 1_048_576;
/** The close comes once the client has been silent this long… */
const LINGER_IDLE_MS = 2_000;
/** …or this long after the answer, whichever is first. */
const LINGER_TOTAL_MS = 10_000;

/** What a GraphQL client reads (it looks for `errors`, not a problem document). */
function sendGraphQLTooLarge(res: ServerResponse, message: string): void {
  sendJson(
    res,
    413,
    { errors: [{ message, extensions: { code: 'PAYLOAD_TOO_LARGE' } }] },
    { connection: 'close' },
  );
}

/** Answers 413 for `req`'s route, then lingers as above. */
export function answerTooLarge(req: IncomingMessage, res: ServerResponse, message: string): void {
  if (res.headersSent) return void res.destroy();
  // The answer goes out whole now (its Content-Length is complete), but the response ends only
  // once the body has been read: an ended response with `Connection: close` makes Node stop
  // reading the socket, and the client's unread bytes turn the close into a reset.
  const end = res.end.bind(res);
  res.end = ((chunk?: unknown) => {
    if (typeof chunk === 'string' || Buffer.isBuffer(chunk)) res.write(chunk);
    return res;
  }) as ServerResponse['end'];
  const path = (req.url ?? '/').split('?')[0];
  if (path === '/graphql') sendGraphQLTooLarge(res, message);
  else sendProblem(res, 413, 'PAYLOAD_TOO_LARGE', message, { connection: 'close' });
  res.end = end;
  linger(req, req.socket, () => void end());
}

function linger(req: IncomingMessage, socket: Socket, endAnswer: () => void): void {
  let dropped = 0;
  let done = false;
  const close = (cut: boolean) => {
    if (done) return;
    done = true;
    clearTimeout(idle);
    clearTimeout(total);
    endAnswer();
    // Past a bound, whatever the client still sends is not waited for (after the answer is
    // out: destroy() drops what is still queued to write).
    if (!cut) return;
    if (socket.writableFinished) socket.destroy();
    else socket.once('finish', () => socket.destroy());
  };
  const idle = setTimeout(() => close(true), LINGER_IDLE_MS);
  const total = setTimeout(() => close(true), LINGER_TOTAL_MS);
  req.on('data', (chunk: Buffer) => {
    dropped += chunk.length;
    if (dropped > LINGER_BYTES) return close(true);
    idle.refresh();
  });
  socket.once('close', () => {
    clearTimeout(idle);
    clearTimeout(total);
  });
  // The whole body has arrived: nothing unread is left to turn the close into a reset.
  req.once('end', () => close(false));
  req.once('error', () => close(true));
  req.resume();
  if (req.readableEnded) close(false);
}
