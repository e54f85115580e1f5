import {
  A2AError,
  RequestMalformedError,
  TaskNotCancelableError,
  TaskNotFoundError,
  UnsupportedOperationError,
} from '@a2a-js/sdk/errors';
import type { Logger } from 'pino';
import { coerceError, ServiceError } from '../../errors.js';
import type { Caller } from './context.js';
import { MASKED } from './wire.js';

/** What TASK_TERMINAL means depends on what was asked. */
export type Operation = 'cancel' | 'answer' | 'other';

/**
 * A failure as the A2A error clients get (DESIGN §10). Expected ones keep their meaning;
 * limits are also kept on the caller so the route can answer 429/503 with Retry-After;
 * anything else is logged with its cause and masked as -32603.
 */
export function toA2AError(
  err: unknown,
  caller: Caller,
  log: Logger,
  operation: Operation = 'other',
): Error {
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
      case 'TOO_MANY_SUBSCRIPTIONS':
        caller.refusal = err;
        return new A2AError(err.message);
      default:
        break;
    }
  }
  log.error({ err: coerceError(err) }, 'unexpected error in the A2A face');
  return new A2AError(MASKED);
}
