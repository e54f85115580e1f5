import { type ErrorCode, ServiceError } from '../../errors.js';

/** A refusal at the HTTP gate, before any JSON-RPC: a problem document with this status. */
export class GateRefusal extends ServiceError {
  constructor(
    readonly status: number,
    code: ErrorCode | 'METHOD_NOT_ALLOWED',
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(code as ErrorCode, message);
  }
}
