import type { IncomingMessage } from 'node:http';
import { readBody } from '../../http/body.js';
import { requireJsonType } from '../../http/refusal.js';

export type ParsedBody = { ok: true; value: unknown } | { ok: false };

/**
 * Reads a POST body as JSON under the server's body limit (`readBody`: past it,
 * PayloadTooLarge, which the server answers 413), refusing what is not `application/json`
 * (415) before reading a byte.
 */
export async function readJsonBody(req: IncomingMessage): Promise<ParsedBody> {
  requireJsonType(req, 'Send JSON-RPC as application/json.');
  const raw = await readBody(req);
  try {
    return { ok: true, value: JSON.parse(raw.toString('utf8')) };
  } catch {
    return { ok: false };
  }
}
