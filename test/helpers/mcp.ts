import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  CallToolResultSchema,
  type ClientCapabilities,
  CreateTaskResultSchema,
  ElicitRequestSchema,
  type ElicitResult,
} from '@modelcontextprotocol/sdk/types.js';

export interface McpClientOptions {
  /** Answers `elicitation/create`; given, the client declares form elicitation. */
  elicit?: (params: any, extra: { signal: AbortSignal }) => ElicitResult | Promise<ElicitResult>;
  /** Resume this session id instead of opening one. */
  sessionId?: string;
  capabilities?: ClientCapabilities;
}

export interface McpClient {
  client: Client;
  transport: StreamableHTTPClientTransport;
  /** tools/call with `task`: the CreateTaskResult. */
  startTask(name: string, args: unknown, ttl?: number): Promise<any>;
  close(): Promise<void>;
}

/** The SDK's own client over Streamable HTTP to `<url>/mcp`, as the bearer of `token`. */
export async function connectMcp(
  url: string,
  token: string | null,
  options: McpClientOptions = {},
): Promise<McpClient> {
  const transport = new StreamableHTTPClientTransport(new URL(`${url}/mcp`), {
    requestInit: token ? { headers: { authorization: `Bearer ${token}` } } : {},
    ...(options.sessionId ? { sessionId: options.sessionId } : {}),
    reconnectionOptions: {
      maxReconnectionDelay: 1000,
      initialReconnectionDelay: 100,
      reconnectionDelayGrowFactor: 1,
      maxRetries: 0,
    },
  });
  const capabilities: ClientCapabilities = {
    ...(options.elicit ? { elicitation: { form: {} } } : {}),
    ...options.capabilities,
  };
  const client = new Client({ name: 'taskhandle-test', version: '1.0.0' }, { capabilities });
  if (options.elicit) {
    const elicit = options.elicit;
    client.setRequestHandler(ElicitRequestSchema, (request, extra) =>
      elicit(request.params, extra),
    );
  }
  // With a session id the client resumes it: no initialize is sent.
  await client.connect(transport);
  return {
    client,
    transport,
    startTask: (name, args, ttl) =>
      client.request(
        {
          method: 'tools/call',
          params: { name, arguments: args as Record<string, unknown>, task: ttl ? { ttl } : {} },
        },
        CreateTaskResultSchema,
      ),
    close: () => client.close(),
  };
}

export { CallToolResultSchema };

/** The error a client call rejected with (fails the test if it resolved). */
export async function rpcError(
  promise: Promise<unknown>,
): Promise<{ code: number; message: string; data?: any }> {
  try {
    await promise;
  } catch (err) {
    return err as { code: number; message: string };
  }
  throw new Error('expected the call to fail');
}

/** The wire message of an McpError (the SDK prefixes "MCP error <code>: "). */
export const wireMessage = (err: { message: string }) =>
  err.message.replace(/^MCP error -?\d+: /, '');

export interface RawAnswer {
  status: number;
  headers: Headers;
  text: string;
  /** The JSON body, or the JSON-RPC messages of an SSE body. */
  body: any;
}

/**
 * A hand-written request to `/mcp`, for what the SDK client cannot show (status lines,
 * `WWW-Authenticate`, `Origin`). An SSE answer is read until the stream ends.
 */
export async function rawMcp(
  url: string,
  init: {
    method?: string;
    token?: string | null;
    body?: unknown;
    session?: string;
    headers?: Record<string, string>;
  },
): Promise<RawAnswer> {
  const headers: Record<string, string> = {
    accept: 'application/json, text/event-stream',
    ...(init.body !== undefined ? { 'content-type': 'application/json' } : {}),
    ...(init.token ? { authorization: `Bearer ${init.token}` } : {}),
    ...(init.session ? { 'mcp-session-id': init.session } : {}),
    ...init.headers,
  };
  const response = await fetch(`${url}/mcp`, {
    method: init.method ?? 'POST',
    headers,
    ...(init.body !== undefined
      ? { body: typeof init.body === 'string' ? init.body : JSON.stringify(init.body) }
      : {}),
  });
  const text = await response.text();
  let body: any;
  if (response.headers.get('content-type')?.startsWith('text/event-stream')) {
    body = text
      .split('\n')
      .filter((line) => line.startsWith('data: '))
      .map((line) => JSON.parse(line.slice(6)));
  } else {
    try {
      body = JSON.parse(text);
    } catch {
      body = undefined;
    }
  }
  return { status: response.status, headers: response.headers, text, body };
}

export const INITIALIZE = {
  jsonrpc: '2.0',
  id: 0,
  method: 'initialize',
  params: {
    protocolVersion: '2025-11-25',
    capabilities: {},
    clientInfo: { name: 'raw', version: '1' },
  },
};

/** Opens a session by hand; its id. */
export async function rawSession(url: string, token: string): Promise<string> {
  const answer = await rawMcp(url, { token, body: INITIALIZE });
  const session = answer.headers.get('mcp-session-id');
  if (answer.status !== 200 || !session) throw new Error(`initialize failed: ${answer.text}`);
  await rawMcp(url, {
    token,
    session,
    body: { jsonrpc: '2.0', method: 'notifications/initialized' },
    headers: { 'mcp-protocol-version': '2025-11-25' },
  });
  return session;
}
