import {
  A2AError,
  RequestMalformedError,
  TaskNotCancelableError,
  TaskNotFoundError,
  UnsupportedOperationError,
} from '@a2a-js/sdk/errors';
import type { Logger } from 'pino';
import { coerceError, type ErrorCode, ServiceError } from '../../errors.js';
import { MASKED } from './wire.js';

/** What TASK_TERMINAL means depends on what was asked. */
export type Operation = 'cancel' | 'answer' | 'other';

/** The limits HTTP answers itself, 429/503 with Retry-After (DESIGN §12), not as JSON-RPC. */
const LIMITS = new Set<string>(['RATE_LIMITED', 'SERVICE_UNAVAILABLE', 'TOO_MANY_SUBSCRIPTIONS']);

/**
 * A failure as the A2A error clients get (DESIGN §10). Expected ones keep their meaning;
 * a limit carries its code (and `retryAfterMs`) in the error's metadata, through the SDK's
 * transport, so the route can answer it at the HTTP level (`limitOf`); anything else is
 * logged with its cause and masked as -32603.
 */
export function toA2AError(err: unknown, log: Logger, operation: Operation = 'other'): Error {
  if (err instanceof A2AError) return err;
  if (err instanceof ServiceError) {
    switch (err.code) {
      case 'NOT_FOUND':
        return new TaskNotFoundError();
      case 'BAD_USER_INPUT':
      case 'IDEMPOTENCY_KEY_REUSED':
        return new RequestMalformedError(err.message);
      case 'TASK_TERMINAL':
        return operation === 'cancel'
          ? new TaskNotCancelableError(err.message)
          : new UnsupportedOperationError(err.message);
      case 'NOT_AWAITING_INPUT':
        return new UnsupportedOperationError(err.message);
      case 'RATE_LIMITED':
      case 'SERVICE_UNAVAILABLE':
      case 'TOO_MANY_SUBSCRIPTIONS': {
        const retryAfterMs = err.details?.retryAfterMs;
        const metadata: Record<string, string> = { code: err.code };
        if (typeof retryAfterMs === 'number') metadata.retryAfterMs = String(retryAfterMs);
        return new A2AError({ message: err.message, metadata });
      }
      default:
        break;
    }
  }
  log.error({ err: coerceError(err) }, 'unexpected error in the A2A face');
  return new A2AError(MASKED);
}

/**
 * The limit a failure carries (see `toA2AError`): `failure` is an error a stream threw, or
 * the `error` of a JSON-RPC reply, whose `data` holds the metadata as ErrorInfo.
 */
export function limitOf(failure: unknown): ServiceError | undefined {
  const metadata =
    failure instanceof A2AError
      ? failure.metadata
      : (failure as { data?: Array<{ metadata?: Record<string, string> }> } | undefined)?.data?.[0]
          ?.metadata;
  const code = metadata?.code;
  if (code === undefined || !LIMITS.has(code)) return undefined;
  const message =
    failure instanceof Error ? failure.message : String((failure as { message?: unknown }).message);
  const retryAfterMs = Number(metadata?.retryAfterMs);
  return new ServiceError(
    code as ErrorCode,
    message,
    Number.isFinite(retryAfterMs) ? { retryAfterMs } : undefined,
  );
}
