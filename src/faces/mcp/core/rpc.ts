import type { ServerResponse } from 'node:http';
import { sendJson } from '../../../http/problem.js';

/** JSON-RPC framing both revisions share: reading a message's parts, writing an error. */

/** A JSON object: not null, not an array. */
export const isRecord = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

/** A request's id, as its response must carry it; null when it has none a response can carry. */
export function idOf(message: unknown): string | number | null {
  const id = isRecord(message) ? message.id : undefined;
  return typeof id === 'string' || typeof id === 'number' ? id : null;
}

/** A JSON-RPC error as the whole HTTP response. */
export function sendRpcError(
  res: ServerResponse,
  status: number,
  id: string | number | null,
  error: { code: number; message: string; data?: unknown },
  headers: Record<string, string> = {},
): void {
  const { code, message, data } = error;
  sendJson(
    res,
    status,
    { jsonrpc: '2.0', id, error: { code, message, ...(data === undefined ? {} : { data }) } },
    headers,
  );
}
