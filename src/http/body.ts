import type { IncomingMessage, ServerResponse } from 'node:http';
import { ServiceError } from '../errors.js';
import { answerTooLarge } from './too-large.js';

/**
 * Request bodies on every route, under one limit (`HTTP_MAX_BODY_BYTES`), counted while they
 * arrive: a declared Content-Length over the limit is refused before a byte is read, a
 * chunked body as soon as it passes the limit; nothing past the limit is buffered.
 *
 * A handler calls `readBody(req)` and lets `PayloadTooLarge` propagate: the server answers it
 * at once with 413 and `Connection: close`, and reads the rest for a while (too-large.ts).
 */

/** Kept on the request itself: a WeakMap entry a request costs more than the lookups save. */
const LIMIT = Symbol('bodyLimit');
type Limited = IncomingMessage & { [LIMIT]?: number };

export class PayloadTooLarge extends ServiceError {
  constructor(readonly limit: number) {
    super('PAYLOAD_TOO_LARGE', `The body is larger than HTTP_MAX_BODY_BYTES (${limit} bytes).`);
  }
}

/** The server records each request's limit, so handlers need no configuration of their own. */
export function setBodyLimit(req: IncomingMessage, bytes: number): void {
  (req as Limited)[LIMIT] = bytes;
}

export function bodyLimitOf(req: IncomingMessage): number {
  return (req as Limited)[LIMIT] ?? 1_048_576;
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

/** The whole body, at most the request's limit. @throws PayloadTooLarge, before reading on */
export async function readBody(req: IncomingMessage, limit = bodyLimitOf(req)): Promise<Buffer> {
  if (Number(req.headers['content-length'] ?? 0) > limit) throw new PayloadTooLarge(limit);
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
  if (tooLarge) throw new PayloadTooLarge(limit);
  return Buffer.concat(chunks);
}

/** The 413 of every route, sent at once; the connection closes after a lingering read. */
export function sendTooLarge(res: ServerResponse, limit: number): void {
  answerTooLarge(res.req, res, new PayloadTooLarge(limit).message);
}
