import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import { MAX_BATCH_SIZE } from '@modelcontextprotocol/sdk/server/requestBody.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  isInitializeRequest,
  isJSONRPCErrorResponse,
  isJSONRPCRequest,
  isJSONRPCResultResponse,
  type JSONRPCMessage,
  JSONRPCMessageSchema,
  type MessageExtraInfo,
  type RequestId,
  SUPPORTED_PROTOCOL_VERSIONS,
} from '@modelcontextprotocol/sdk/types.js';
import { sendRpcError } from '../core/rpc.js';
import { SseStream } from './sse.js';

/**
 * The Streamable HTTP transport of one session (DESIGN §9), on Node's own request and
 * response. It answers as the SDK's `StreamableHTTPServerTransport` does — the same checks in
 * the same order, the same statuses, messages and headers, one SSE stream per POST that
 * carries requests — without what that class adds per request: a web `Request` and `Response`
 * built around Node's, a `ReadableStream` pumped back into the socket, a timer before the
 * headers and the headers in a write of their own (see sse.ts). No event store, no JSON
 * response mode: this server uses neither.
 */

export interface SessionTransportOptions {
  sessionIdGenerator: () => string;
  /** Called once `initialize` has been given its session id, before it is answered. */
  onsessioninitialized: (sessionId: string) => void;
}

const header = (req: IncomingMessage, name: string): string | undefined => {
  const value = req.headers[name];
  return Array.isArray(value) ? value.join(', ') : value;
};

/** The SDK's guards, run only where they can pass: each is a schema parse. */
const isResponse = (message: JSONRPCMessage) =>
  ('result' in message || 'error' in message) &&
  (isJSONRPCResultResponse(message) || isJSONRPCErrorResponse(message));
const isInitialize = (message: JSONRPCMessage) =>
  'method' in message && message.method === 'initialize' && isInitializeRequest(message);

/** A POST's stream and the requests whose answers it waits for. */
interface RequestStream {
  stream: SseStream;
  ids: RequestId[];
  answered: number;
}

export class SessionTransport implements Transport {
  sessionId?: string;
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage, extra?: MessageExtraInfo) => void;

  private started = false;
  private initialized = false;
  private closed = false;
  private readonly streamOf = new Map<RequestId, RequestStream>();
  private standalone: SseStream | undefined;

  constructor(private readonly options: SessionTransportOptions) {}

  async start(): Promise<void> {
    if (this.started) throw new Error('Transport already started');
    this.started = true;
  }

  /** Serves one HTTP request of this session; `body` is the parsed JSON of a POST. */
  async handleRequest(
    req: IncomingMessage,
    res: ServerResponse,
    body: unknown,
    authInfo: AuthInfo,
  ): Promise<void> {
    if (this.closed)
      return sendRpcError(res, 404, null, { code: -32001, message: 'Session not found' });
    if (req.method === 'POST') return this.post(req, res, body, authInfo);
    if (req.method === 'GET') return this.get(req, res);
    if (req.method === 'DELETE') return this.delete(req, res);
    this.fail('Method not allowed.');
    sendRpcError(
      res,
      405,
      null,
      { code: -32000, message: 'Method not allowed.' },
      { allow: 'GET, POST, DELETE' },
    );
  }

  private post(req: IncomingMessage, res: ServerResponse, body: unknown, authInfo: AuthInfo) {
    const accept = header(req, 'accept');
    if (!accept?.includes('application/json') || !accept.includes('text/event-stream')) {
      return this.refuse(
        res,
        406,
        -32000,
        'Not Acceptable: Client must accept both application/json and text/event-stream',
      );
    }
    // The face has refused any other Content-Type before reading the body.
    if (Array.isArray(body) && body.length > MAX_BATCH_SIZE) {
      return this.refuse(
        res,
        400,
        -32600,
        `Invalid Request: Batch must not exceed ${MAX_BATCH_SIZE} messages`,
      );
    }
    let messages: JSONRPCMessage[];
    try {
      messages = (Array.isArray(body) ? body : [body]).map((m) => JSONRPCMessageSchema.parse(m));
    } catch {
      return this.refuse(res, 400, -32700, 'Parse error: Invalid JSON-RPC message');
    }

    if (messages.some(isInitialize)) {
      if (this.initialized && this.sessionId !== undefined) {
        return this.refuse(res, 400, -32600, 'Invalid Request: Server already initialized');
      }
      if (messages.length > 1) {
        return this.refuse(
          res,
          400,
          -32600,
          'Invalid Request: Only one initialization request is allowed',
        );
      }
      this.sessionId = this.options.sessionIdGenerator();
      this.initialized = true;
      this.options.onsessioninitialized(this.sessionId);
    } else if (!this.validSession(req, res) || !this.validVersion(req, res)) {
      return;
    }

    const extra: MessageExtraInfo = { authInfo, requestInfo: { headers: req.headers } };
    const ids = messages.filter(isJSONRPCRequest).map((m) => m.id);
    if (ids.length === 0) {
      // Notifications and responses only: accepted, nothing to stream back.
      for (const message of messages) this.onmessage?.(message, extra);
      res.writeHead(202).end();
      return;
    }
    const entry: RequestStream = {
      stream: new SseStream(res, this.sessionId, { flushNow: false }),
      ids,
      answered: 0,
    };
    for (const id of ids) this.streamOf.set(id, entry);
    for (const message of messages) this.onmessage?.(message, extra);
  }

  private get(req: IncomingMessage, res: ServerResponse) {
    if (!header(req, 'accept')?.includes('text/event-stream')) {
      return this.refuse(res, 406, -32000, 'Not Acceptable: Client must accept text/event-stream');
    }
    if (!this.validSession(req, res) || !this.validVersion(req, res)) return;
    if (this.standalone !== undefined) {
      return this.refuse(res, 409, -32000, 'Conflict: Only one SSE stream is allowed per session');
    }
    const stream = new SseStream(res, this.sessionId, {
      flushNow: true,
      onGone: () => {
        if (this.standalone === stream) this.standalone = undefined;
      },
    });
    this.standalone = stream;
  }

  private async delete(req: IncomingMessage, res: ServerResponse) {
    if (!this.validSession(req, res) || !this.validVersion(req, res)) return;
    res.writeHead(200).end();
    await this.close();
  }

  private validSession(req: IncomingMessage, res: ServerResponse): boolean {
    if (!this.initialized) {
      this.refuse(res, 400, -32000, 'Bad Request: Server not initialized');
      return false;
    }
    const sessionId = header(req, 'mcp-session-id');
    if (!sessionId) {
      this.refuse(res, 400, -32000, 'Bad Request: Mcp-Session-Id header is required');
      return false;
    }
    if (sessionId !== this.sessionId) {
      this.refuse(res, 404, -32001, 'Session not found');
      return false;
    }
    return true;
  }

  private validVersion(req: IncomingMessage, res: ServerResponse): boolean {
    const version = header(req, 'mcp-protocol-version');
    if (version === undefined || SUPPORTED_PROTOCOL_VERSIONS.includes(version)) return true;
    this.refuse(
      res,
      400,
      -32000,
      `Bad Request: Unsupported protocol version: ${version} (supported versions: ${SUPPORTED_PROTOCOL_VERSIONS.join(', ')})`,
    );
    return false;
  }

  /** A JSON-RPC error with no id, as the SDK's transport refuses a request. */
  private refuse(res: ServerResponse, status: number, code: number, message: string): void {
    this.fail(message);
    sendRpcError(res, status, null, { code, message });
  }

  private fail(message: string): void {
    this.onerror?.(new Error(message));
  }

  /**
   * A response goes to the stream of the POST that carried its request, which ends once every
   * request it carried is answered; a message related to a request goes there too, any other
   * to the session's GET stream if one is open.
   * @throws Error when a response's stream is gone (the client went away), as the SDK does
   */
  async send(message: JSONRPCMessage, options?: { relatedRequestId?: RequestId }): Promise<void> {
    const response = isResponse(message);
    const requestId = response ? (message as { id: RequestId }).id : options?.relatedRequestId;
    if (requestId === undefined) {
      if (response) {
        throw new Error(
          'Cannot send a response on a standalone SSE stream unless resuming a previous client request',
        );
      }
      this.standalone?.write(message);
      return;
    }
    const entry = this.streamOf.get(requestId);
    if (!entry) throw new Error(`No connection established for request ID: ${String(requestId)}`);
    if (!response) {
      entry.stream.write(message);
      return;
    }
    entry.answered++;
    if (entry.answered < entry.ids.length) {
      entry.stream.write(message);
      return;
    }
    for (const id of entry.ids) this.streamOf.delete(id);
    if (entry.stream.open) entry.stream.end(message);
    else if (!this.closed) {
      throw new Error(`No connection established for request ID: ${String(requestId)}`);
    }
  }

  /** Ends every stream of the session; its requests' answers have nowhere to go any more. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const entry of this.streamOf.values()) entry.stream.end();
    this.streamOf.clear();
    this.standalone?.end();
    this.standalone = undefined;
    this.onclose?.();
  }
}
