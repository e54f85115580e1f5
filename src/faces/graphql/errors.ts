import { GraphQLError } from 'graphql';
import { type YogaLogger, maskError as yogaMaskError } from 'graphql-yoga';
import type { Logger } from 'pino';
import { coerceError, ServiceError } from '../../errors.js';

/** What a GraphQL client reads in place of an unexpected error. */
export const MASKED_MESSAGE = 'Unexpected error.';
/** The longest reason a WebSocket close frame carries (RFC 6455 §5.5: 125 bytes with the code). */
const MAX_CLOSE_REASON_BYTES = 123;

function serviceErrorOf(error: unknown): ServiceError | undefined {
  if (error instanceof ServiceError) return error;
  if (error instanceof GraphQLError) return serviceErrorOf(error.originalError);
  return undefined;
}

/**
 * Expected failures keep their message and gain `extensions.code`; everything else becomes
 * "Unexpected error." (yoga's masking, which logs the cause).
 */
export function maskError(error: unknown, message: string, isDev?: boolean): Error {
  const expected = serviceErrorOf(error);
  if (expected) {
    const located = error instanceof GraphQLError ? error : undefined;
    return new GraphQLError(expected.message, {
      ...(located?.nodes ? { nodes: located.nodes } : {}),
      ...(located?.source ? { source: located.source } : {}),
      ...(located?.positions ? { positions: located.positions } : {}),
      ...(located?.path ? { path: located.path } : {}),
      extensions: { code: expected.code, ...expected.details },
    });
  }
  return yogaMaskError(error, message, isDev);
}

/** Yoga's logger on pino; expected failures are not errors of the server and are not logged as such. */
export function yogaLogger(log: Logger): YogaLogger {
  return {
    debug: (...args) => log.debug({ args }, 'yoga'),
    info: (...args) => log.info({ args }, 'yoga'),
    warn: (...args) => log.warn({ args }, 'yoga'),
    error: (...args) => {
      const [first] = args;
      if (serviceErrorOf(first)) return;
      const err =
        first instanceof GraphQLError && first.originalError ? first.originalError : first;
      log.error({ err }, 'unexpected error while serving GraphQL');
    },
  };
}

/**
 * The one masking rule of the GraphQL face, from the Config: an unexpected error reaches a
 * client as "Unexpected error." with code INTERNAL_SERVER_ERROR, its cause goes to the log,
 * and only with NODE_ENV=development (`Config.development`, never in production) does the
 * client also read what failed. Yoga is built with it (HTTP, SSE, and every operation over
 * WebSocket, which runs through yoga's envelop), and the direct POST path and the WebSocket's
 * own close reason take it from the same object: no other environment (staging, test…) unmasks.
 */
export class ErrorMasking {
  private constructor(
    /** Whether clients read what failed (development only). */
    readonly unmasked: boolean,
  ) {}

  /** Masked everywhere but in development. */
  static of(config: { development?: boolean | undefined; production: boolean }): ErrorMasking {
    return new ErrorMasking(config.development === true && !config.production);
  }

  /** Masked whatever the environment: a yoga built without a Config (tests, benchmarks). */
  static readonly masked = new ErrorMasking(false);

  /** Yoga's `maskedErrors` option. */
  get yogaOptions(): { maskError: typeof maskError; isDev: boolean; errorMessage: string } {
    return { maskError, isDev: this.unmasked, errorMessage: MASKED_MESSAGE };
  }

  /**
   * An unexpected error as a client reads it, as yoga would mask it (the caller logs the
   * cause); in development with what failed in `extensions.originalError`.
   */
  unexpected(thrown: unknown): GraphQLError {
    const masked = yogaMaskError(thrown, MASKED_MESSAGE, this.unmasked) as GraphQLError;
    // Yoga leaves `unexpected` out of what it sends; so does every other path.
    const { unexpected: _internal, ...extensions } = masked.extensions;
    return new GraphQLError(masked.message, { extensions });
  }

  /** The reason of a WebSocket closed (4500) for an unexpected error. */
  closeReason(thrown: unknown): string {
    const reason = coerceError(thrown).message;
    return this.unmasked && Buffer.byteLength(reason) <= MAX_CLOSE_REASON_BYTES
      ? reason
      : 'Internal server error';
  }
}
