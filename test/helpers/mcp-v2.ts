import { eventually } from './app.js';
import { type RawAnswer, rawMcp } from './mcp.js';

export const VERSION = '2026-07-28';
export const TASKS = 'io.modelcontextprotocol/tasks';
/** Per-request capabilities of a client that follows tasks. */
export const WITH_TASKS = { extensions: { [TASKS]: {} } };

export interface V2Options {
  /** The request's `_meta` client capabilities. @default {} */
  capabilities?: Record<string, unknown>;
  /** Headers to add or (by the same name) replace. */
  headers?: Record<string, string>;
  /** Replaces the whole `_meta`. */
  meta?: unknown;
}

/** The header `Mcp-Name` mirrors for `method`, as a 2026-07-28 client sends it. */
function nameOf(method: string, params: Record<string, unknown>): string | undefined {
  if (method === 'tools/call') return params.name as string;
  if (method.startsWith('tasks/')) return params.taskId as string | undefined;
  return undefined;
}

/** One 2026-07-28 request by hand: headers and `_meta` as the revision says, raw answer back. */
export function v2(
  url: string,
  token: string | null,
  method: string,
  params: Record<string, unknown> = {},
  options: V2Options = {},
): Promise<RawAnswer> {
  const name = nameOf(method, params);
  const meta = options.meta ?? {
    'io.modelcontextprotocol/protocolVersion': VERSION,
    'io.modelcontextprotocol/clientCapabilities': options.capabilities ?? {},
  };
  return rawMcp(url, {
    token,
    body: { jsonrpc: '2.0', id: 7, method, params: { ...params, _meta: meta } },
    headers: {
      'mcp-protocol-version': VERSION,
      'mcp-method': method,
      ...(typeof name === 'string' ? { 'mcp-name': name } : {}),
      ...options.headers,
    },
  });
}

/** The result of a 2026-07-28 call that must succeed. */
export async function v2Result(
  url: string,
  token: string,
  method: string,
  params: Record<string, unknown> = {},
  options: V2Options = {},
): Promise<any> {
  const answer = await v2(url, token, method, params, options);
  if (answer.status !== 200 || !answer.body?.result) {
    throw new Error(`${method} failed: ${answer.status} ${answer.text}`);
  }
  return answer.body.result;
}

/** Polls tasks/get (as a client of the revision does) until the task reaches `done`. */
export function pollUntil(
  url: string,
  token: string,
  taskId: string,
  done: (task: any) => boolean,
): Promise<any> {
  return eventually(async () => {
    const task = await v2Result(url, token, 'tasks/get', { taskId }, { capabilities: WITH_TASKS });
    return done(task) ? task : undefined;
  });
}

export const isFinal = (task: { status: string }) =>
  ['completed', 'failed', 'cancelled'].includes(task.status);
