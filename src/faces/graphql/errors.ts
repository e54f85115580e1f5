import { GraphQLError } from 'graphql';
import { type YogaLogger, maskError as yogaMaskError } from 'graphql-yoga';
import type { Logger } from 'pino';
import { ServiceError } from '../../errors.js';

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
