import { ErrorCode } from '@modelcontextprotocol/sdk/types.js';
import type { Logger } from 'pino';
import { coerceError, ServiceError } from '../../../errors.js';
import { MASKED_MESSAGE } from '../../../http/last-catch.js';

/**
 * The JSON-RPC errors of both revisions (DESIGN §9, §9b): one error class, the codes, and the
 * one mapping from the domain's ServiceError to a JSON-RPC error.
 */

/** JSON-RPC 2.0's own codes, as the SDK names them. */
export const PARSE_ERROR = ErrorCode.ParseError;
export const INVALID_REQUEST = ErrorCode.InvalidRequest;
export const METHOD_NOT_FOUND = ErrorCode.MethodNotFound;
export const INVALID_PARAMS = ErrorCode.InvalidParams;
export const INTERNAL_ERROR = ErrorCode.InternalError;
/** Server-error codes (JSON-RPC reserves -32000..-32099) for the §12 refusals, which clients may retry. */
export const RATE_LIMITED_CODE = -32029;
export const SERVICE_UNAVAILABLE_CODE = -32053;
/** MCP's own: the request was cancelled, or its connection closed. */
export const CONNECTION_CLOSED = ErrorCode.ConnectionClosed;

/**
 * A JSON-RPC error as it goes on the wire: the 2025-11-25 SDK sends `code`, `message` and
 * `data` of what a handler throws as they are; the 2026-07-28 transport also gives it an HTTP
 * `status`.
 */
export class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
    readonly status = 200,
  ) {
    super(message);
    this.name = 'RpcError';
  }
}

/** Unknown, expired, someone else's, or not a UUID: one answer for all, so nothing leaks. */
export const taskNotFound = () => new RpcError(INVALID_PARAMS, 'Task not found.');

/**
 * The JSON-RPC error for what a method threw: an RpcError as it is; a contract code keeps its
 * message and says its code in `data`; anything else is masked (-32603) and logged with its
 * cause. Never throws.
 */
export function rpcErrorOf(thrown: unknown, log: Logger, method: string): RpcError {
  if (thrown instanceof RpcError) return thrown;
  if (thrown instanceof ServiceError) {
    const data = { code: thrown.code };
    switch (thrown.code) {
      case 'NOT_FOUND':
        return taskNotFound();
      case 'RATE_LIMITED':
      case 'SERVICE_UNAVAILABLE': {
        const retryAfterMs = thrown.details?.retryAfterMs;
        const code = thrown.code === 'RATE_LIMITED' ? RATE_LIMITED_CODE : SERVICE_UNAVAILABLE_CODE;
        return new RpcError(code, thrown.message, {
          ...data,
          ...(typeof retryAfterMs === 'number' ? { retryAfterMs } : {}),
        });
      }
      case 'UNAUTHENTICATED':
      case 'FORBIDDEN':
        return new RpcError(INVALID_REQUEST, thrown.message, data);
      default:
        return new RpcError(INVALID_PARAMS, thrown.message, data);
    }
  }
  log.error({ err: coerceError(thrown), method }, 'unexpected error in the MCP face');
  return new RpcError(INTERNAL_ERROR, MASKED_MESSAGE);
}
