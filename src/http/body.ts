import type { IncomingMessage, ServerResponse } from 'node:http';
import { ServiceError } from '../errors.js';
import { sendProblem } from './problem.js';

/**
 * Request bodies on every route, under one limit (`HTTP_MAX_BODY_BYTES`), counted while they
 * arrive: a declared Content-Length over the limit is refused before a byte is read, a
 * chunked body as soon as it passes the limit; nothing past the limit is buffered.
 *
 * A handler calls `readBody(req)` and lets `PayloadTooLarge` propagate: the server answers it
 * with 413 and `Connection: close`.
 */

/**
 * How much of a refused body is read and dropped so the close is clean. Most clients (fetch,
 * curl, every SDK here) write the whole body before they read the answer: a close with
 * unread bytes is a reset, and they see a broken pipe instead of the 413. Past this the
 * connection is reset; the request timeout bounds how long the rest may take.
 */
const DRAIN_BYTES = 64 * 1_048_576;
const limitOf = new WeakMap<IncomingMessage, number>();

export class PayloadTooLarge extends ServiceError {
  constructor(readonly limit: number) {
    super('PAYLOAD_TOO_LARGE', `The body is larger than HTTP_MAX_BODY_BYTES (${limit} bytes).`);
  }
}

/** The server records each request's limit, so handlers need no configuration of their own. */
export function setBodyLimit(req: IncomingMessage, bytes: number): void {
  limitOf.set(req, bytes);
}

export function bodyLimitOf(req: IncomingMessage): number {
  return limitOf.get(req) ?? 1_048_576;
}

/** Whether the request says it carries a body (a length above 0, or chunks). */
export function hasBody(req: IncomingMessage): boolean {
  const length = req.headers['content-length'];
  return (length !== undefined && length !== '0') || req.headers['transfer-encoding'] !== undefined;
}

/** Whether the declared Content-Length is over the request's limit. */
export function declaredTooLarge(req: IncomingMessage): boolean {
  return Number(req.headers['content-length'] ?? 0) > bodyLimitOf(req);
}

/**
 * Reads and drops what is left of a refused body, up to DRAIN_BYTES, so the 413 reaches a
 * client that is still sending and the connection closes with a FIN, not a reset.
 */
function drain(req: IncomingMessage): Promise<void> {
  return new Promise((resolve) => {
    if (req.readableEnded || req.destroyed) return resolve();
    let dropped = 0;
    const done = () => {
      req.off('data', onData);
      resolve();
    };
    const onData = (chunk: Buffer) => {
      dropped += chunk.length;
      if (dropped > DRAIN_BYTES) done();
    };
    req.on('data', onData);
    req.once('end', done);
    req.once('close', done);
    req.once('error', done);
    req.resume();
  });
}

/** The whole body, at most the request's limit. @throws PayloadTooLarge, after draining */
export async function readBody(req: IncomingMessage, limit = bodyLimitOf(req)): Promise<Buffer> {
  if (Number(req.headers['content-length'] ?? 0) > limit) {
    await drain(req);
    throw new PayloadTooLarge(limit);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  const tooLarge = await new Promise<boolean>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limit) return void chunks.push(chunk);
      req.off('data', onData);
      chunks.length = 0;
      resolve(true);
    };
    req.on('data', onData);
    req.once('end', () => resolve(false));
    req.once('error', reject);
    req.once('close', () =>
      req.readableEnded
        ? resolve(false)
        : reject(new ServiceError('BAD_USER_INPUT', 'The body ended early.')),
    );
  });
  if (tooLarge) {
    await drain(req);
    throw new PayloadTooLarge(limit);
  }
  return Buffer.concat(chunks);
}

/** The 413 of every route: a problem document, and the connection closed once it is sent. */
export function sendTooLarge(res: ServerResponse, limit: number): void {
  if (res.headersSent) return void res.destroy();
  sendProblem(res, 413, 'PAYLOAD_TOO_LARGE', new PayloadTooLarge(limit).message, {
    connection: 'close',
  });
}
