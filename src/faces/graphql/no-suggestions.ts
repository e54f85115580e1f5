import { GraphQLError } from 'graphql';
import type { Plugin } from 'graphql-yoga';

/**
 * graphql-js suggests names it knows ("Did you mean the enum value "WORKING"?") for mistyped
 * fields, arguments, types and enum values, in validation and in variable coercion. Each one
 * names a part of the schema that production's closed introspection would not show, so there
 * the suggestion is cut from every message (DESIGN §12); outside production it helps the
 * person typing.
 */
const SUGGESTION = /\s*Did you mean [^?]*\?/g;

export function withoutSuggestion(message: string): string {
  return message.replace(SUGGESTION, '');
}

/** The same error with its message cut; the error itself when it suggests nothing. */
export function unsuggested(error: GraphQLError): GraphQLError {
  const message = withoutSuggestion(error.message);
  if (message === error.message) return error;
  return rebuilt(error, message, error.extensions);
}

/** `error` again with another message and extensions, keeping where it points. */
export function rebuilt(
  error: GraphQLError,
  message: string,
  extensions: GraphQLError['extensions'],
): GraphQLError {
  return new GraphQLError(message, {
    ...(error.nodes ? { nodes: error.nodes } : {}),
    ...(error.source ? { source: error.source } : {}),
    ...(error.positions ? { positions: error.positions } : {}),
    ...(error.path ? { path: error.path } : {}),
    ...(error.originalError ? { originalError: error.originalError } : {}),
    extensions,
  });
}

/** Validation errors without suggestions (execution's are cut where they are coded). */
export function useNoSuggestions(): Plugin {
  return {
    onValidate:
      () =>
      ({ result, setResult }) => {
        const cut = result.map((error) =>
          error instanceof GraphQLError ? unsuggested(error) : error,
        );
        if (cut.some((error, i) => error !== result[i])) setResult(cut);
      },
  };
}
