import type { ServerResponse } from 'node:http';

const TITLE_OF: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  409: 'Conflict',
  413: 'Content Too Large',
  415: 'Unsupported Media Type',
  422: 'Unprocessable Content',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  503: 'Service Unavailable',
};

/** A JSON answer that no cache keeps. */
export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
  type = 'application/json',
): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': type,
    'content-length': String(Buffer.byteLength(text)),
    'cache-control': 'no-store',
    ...headers,
  });
  res.end(text);
}

/**
 * An RFC 9457 problem document carrying one of the contract's codes; `members` are extension
 * members after `detail` (a batch entry's `index`).
 */
export function sendProblem(
  res: ServerResponse,
  status: number,
  code: string,
  detail: string,
  headers: Record<string, string> = {},
  members: Record<string, unknown> = {},
): void {
  sendJson(
    res,
    status,
    { type: 'about:blank', title: TITLE_OF[status] ?? 'Error', status, code, detail, ...members },
    headers,
    'application/problem+json',
  );
}
