import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { coerceError, ServiceError } from '../errors.js';
import { PayloadTooLarge, sendTooLarge } from './body.js';
import { sendProblem } from './problem.js';
import { sendRefusal } from './refusal.js';

/** What a client reads in place of an unexpected error, on every plain-HTTP face. */
export const MASKED_MESSAGE = 'Unexpected error.';

export interface LastCatchOptions {
  log: Logger;
  /** Who served the request, for the log line: "unexpected error in the REST face". */
  where: string;
  /** More for the log line (the JSON-RPC method, say); it may replace `method` and `path`. */
  context?: Record<string, unknown>;
  /** The parameters of a 401's bearer challenge (RFC 9728's `resource_metadata`, say). */
  challenge?: Record<string, string>;
  /**
   * Answers what the face expects to be thrown, in its own protocol, and says whether it did.
   * @default a ServiceError as its refusal (`sendRefusal`, problem+json, with `challenge`)
   */
  refuse?: (res: ServerResponse, thrown: unknown) => boolean;
  /**
   * Answers an unexpected error, masked: nothing of it reaches the client.
   * @default a 500 problem document, code INTERNAL_SERVER_ERROR
   */
  mask?: (res: ServerResponse) => void;
}

/** `instanceof` that a hostile value (a proxy refusing its prototype) cannot make throw. */
function isA<T>(value: unknown, type: abstract new (...args: never[]) => T): value is T {
  try {
    return value instanceof type;
  } catch {
    return false;
  }
}

/** Whether what was thrown is the face's to answer, and answered; what it cannot judge is not. */
function refused(res: ServerResponse, thrown: unknown, options: LastCatchOptions): boolean {
  try {
    if (options.refuse) return options.refuse(res, thrown);
  } catch (err) {
    if (res.headersSent) throw err;
    return false;
  }
  if (!isA(thrown, ServiceError)) return false;
  sendRefusal(res, thrown, options.challenge);
  return true;
}

const maskedProblem = (res: ServerResponse) =>
  sendProblem(res, 500, 'INTERNAL_SERVER_ERROR', MASKED_MESSAGE);

/**
 * The last catch of a request, on the server and on every plain-HTTP face: what was thrown
 * while serving it becomes one answer, the same way everywhere.
 * - Once the headers are out no answer can follow: the cause is logged and the socket
 *   destroyed, so the client sees a cut response rather than one that looks whole.
 * - PayloadTooLarge: the 413 of every route, closing the connection (too-large.ts).
 * - What the face expects (`refuse`; a ServiceError by default): its coded refusal.
 * - Anything else: logged with its cause, and answered masked (`mask`).
 * Total: it never throws; if writing the answer fails, the socket is destroyed.
 */
export function answerThrown(
  req: IncomingMessage,
  res: ServerResponse,
  thrown: unknown,
  options: LastCatchOptions,
): void {
  const { where } = options;
  const logError = (err: unknown, msg: string) =>
    logCause(
      options.log,
      err,
      { method: req.method, path: (req.url ?? '/').split('?')[0], ...options.context },
      msg,
    );
  try {
    if (res.headersSent) {
      logError(thrown, `${where}: the response failed after its headers were sent`);
      res.destroy();
      return;
    }
    if (isA(thrown, PayloadTooLarge)) {
      sendTooLarge(res, thrown.limit);
      return;
    }
    if (refused(res, thrown, options)) return;
    logError(thrown, `unexpected error in ${where}`);
    (options.mask ?? maskedProblem)(res);
  } catch (err) {
    logError(err, `${where}: answering an error failed`);
    res.destroy();
  }
}

/**
 * Logs `thrown` with its cause at error; when the cause cannot be serialized (a getter that
 * throws somewhere in it), with its description only.
 */
function logCause(log: Logger, thrown: unknown, context: object, msg: string): void {
  const err = coerceError(thrown);
  try {
    log.error({ err, ...context }, msg);
  } catch {
    log.error({ err: { message: err.message }, ...context }, msg);
  }
}
