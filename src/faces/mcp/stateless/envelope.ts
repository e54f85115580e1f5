import type { IncomingMessage } from 'node:http';
import { SUPPORTED_PROTOCOL_VERSIONS } from '@modelcontextprotocol/sdk/types.js';
import { INVALID_PARAMS, INVALID_REQUEST, RpcError } from '../core/errors.js';
import { isRecord } from '../core/rpc.js';

/**
 * The 2026-07-28 request envelope (DESIGN §9b): which requests the stateless face serves, and
 * the checks every one of them passes before its method runs — the per-request `_meta`, the
 * protocol version and the `Mcp-Method`/`Mcp-Name` headers that mirror the body.
 */

export const STATELESS_VERSION = '2026-07-28';
/** What `server/discover` and an unsupported version's error list: this face's and §9's. */
export const SUPPORTED_VERSIONS = [STATELESS_VERSION, '2025-11-25'];

const META_VERSION = 'io.modelcontextprotocol/protocolVersion';
const META_CAPABILITIES = 'io.modelcontextprotocol/clientCapabilities';

/** The revision's own error codes (its `-32020..-32099` range). */
export const HEADER_MISMATCH = -32020;
export const MISSING_CLIENT_CAPABILITY = -32021;
export const UNSUPPORTED_VERSION = -32022;

export interface Envelope {
  id: string | number | null;
  method: string;
  params: Record<string, unknown>;
  /** The client's capabilities as this request declares them. */
  capabilities: Record<string, unknown>;
}

/** A header's value with its optional whitespace trimmed (RFC 9110 §5.5); undefined if absent. */
function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return typeof value === 'string' ? value.trim() : undefined;
}

/**
 * Whether this request is the 2026-07-28 revision's rather than §9's: no session, and either a
 * protocol version header §9's SDK does not speak, or none with a per-request `_meta` version.
 */
export function isStateless(req: IncomingMessage, body: unknown): boolean {
  if (req.method !== 'POST' || req.headers['mcp-session-id'] !== undefined) return false;
  const version = header(req, 'mcp-protocol-version');
  if (version !== undefined) return !SUPPORTED_PROTOCOL_VERSIONS.includes(version);
  if (!isRecord(body) || body.method === 'initialize') return false;
  return isRecord(body.params) && isRecord(body.params._meta) && META_VERSION in body.params._meta;
}

/** `Mcp-Name`'s value: plain, or the revision's `=?base64?…?=` form decoded. */
function decodeName(value: string): string {
  const sealed = /^=\?base64\?([A-Za-z0-9+/=]*)\?=$/.exec(value);
  return sealed ? Buffer.from(sealed[1] as string, 'base64').toString('utf8') : value;
}

/** The body field `Mcp-Name` mirrors for each method that has one. */
function nameOf(method: string, params: Record<string, unknown>): unknown {
  if (method === 'tools/call' || method === 'prompts/get') return params.name;
  if (method === 'resources/read') return params.uri;
  if (method === 'tasks/get' || method === 'tasks/update' || method === 'tasks/cancel') {
    return params.taskId;
  }
  return undefined;
}

const mismatch = (message: string) =>
  new RpcError(HEADER_MISMATCH, `Header mismatch: ${message}`, undefined, 400);

/**
 * Checks a request's envelope in the order the revision's transport states it.
 * @throws RpcError -32600 for what is not one JSON-RPC request, -32020 for a header that
 *   is missing or disagrees with the body, -32602 for a `_meta` without its version or
 *   capabilities, -32022 for a version this face does not serve
 */
export function checkEnvelope(req: IncomingMessage, body: unknown): Envelope {
  if (!isRecord(body) || body.jsonrpc !== '2.0' || typeof body.method !== 'string') {
    throw new RpcError(
      INVALID_REQUEST,
      'Invalid Request: send one JSON-RPC request.',
      undefined,
      400,
    );
  }
  const id = typeof body.id === 'string' || typeof body.id === 'number' ? body.id : null;
  const method = body.method;
  const params = isRecord(body.params) ? body.params : {};

  const version = header(req, 'mcp-protocol-version');
  if (version === undefined) throw mismatch('the MCP-Protocol-Version header is missing.');
  const meta = isRecord(params._meta) ? params._meta : undefined;
  const missing = [META_VERSION, META_CAPABILITIES].filter((key) => meta?.[key] === undefined);
  if (missing.length > 0 || !isRecord(meta?.[META_CAPABILITIES])) {
    const what = missing.length > 0 ? missing.join(', ') : META_CAPABILITIES;
    throw new RpcError(INVALID_PARAMS, `Invalid params: _meta lacks ${what}.`, undefined, 400);
  }
  if (meta[META_VERSION] !== version) {
    throw mismatch('MCP-Protocol-Version does not match _meta protocolVersion.');
  }
  if (version !== STATELESS_VERSION) {
    throw new RpcError(
      UNSUPPORTED_VERSION,
      `Unsupported protocol version ${JSON.stringify(version)}.`,
      { supported: SUPPORTED_VERSIONS, requested: version },
      400,
    );
  }

  const methodHeader = header(req, 'mcp-method');
  if (methodHeader === undefined) throw mismatch('the Mcp-Method header is missing.');
  if (methodHeader !== method) {
    throw mismatch(`Mcp-Method ${JSON.stringify(methodHeader)} is not the body's method.`);
  }
  const name = nameOf(method, params);
  if (name !== undefined && name !== null) {
    const nameHeader = header(req, 'mcp-name');
    if (nameHeader === undefined) throw mismatch('the Mcp-Name header is missing.');
    if (decodeName(nameHeader) !== String(name)) {
      throw mismatch(`Mcp-Name ${JSON.stringify(nameHeader)} does not match the body.`);
    }
  }
  return { id, method, params, capabilities: meta[META_CAPABILITIES] as Record<string, unknown> };
}
