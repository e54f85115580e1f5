import {
  type DocumentNode,
  type ExecutionResult,
  GraphQLError,
  type GraphQLSchema,
  getOperationAST,
  type OperationDefinitionNode,
  type SourceLocation,
  visit,
} from 'graphql';
import { type CompiledQuery, compileQuery, isCompiledQuery } from 'graphql-jit';
import type { Plugin } from 'graphql-yoga';

/**
 * Runs of one operation before it is compiled. A compile takes 0.7–0.9 ms (a poll's document, a
 * task's every field), some twenty interpreted runs of a poll, so only what clients send again
 * and again earns it; a stream of one-off documents costs what it cost before. @default 3
 */
export const JIT_AFTER_RUNS = 3;

interface Hot {
  runs: number;
  /** Set once compiled; null when graphql-jit could not compile it (it stays interpreted). */
  compiled?: CompiledQuery | null;
}

/**
 * Queries and mutations that are run often execute as compiled code (graphql-jit) instead of
 * graphql-js's interpreter: the same schema, so the same resolvers and the authorization
 * scope-auth wraps around them, and the same envelop `onExecute` hooks around it (error masking,
 * coded errors, metrics), which see only the execute function replaced. Subscriptions keep
 * graphql-js (useSharedEventResults executes their events). What is compiled hangs off the
 * parsed document's operation, which yoga's bounded parse cache holds (limits.ts
 * `boundedParseCaches`), so it goes when the document does.
 */
export function useHotOperationJit(after = JIT_AFTER_RUNS): Plugin {
  const hot = new WeakMap<OperationDefinitionNode, Hot>();
  return {
    onExecute({ args, executeFn, setExecuteFn }) {
      const operation = getOperationAST(args.document, args.operationName ?? undefined);
      if (!operation || operation.operation === 'subscription') return;
      let entry = hot.get(operation);
      if (!entry) {
        entry = { runs: 0 };
        hot.set(operation, entry);
      }
      if (entry.compiled === undefined) {
        entry.runs += 1;
        if (entry.runs <= after) return;
        entry.compiled = literalsAreConstant(args.document) ? compile(args) : null;
      }
      const compiled = entry.compiled;
      if (!compiled) return;
      setExecuteFn((run) => {
        if (run.document !== args.document) return executeFn(run);
        const result = compiled.query(run.rootValue, run.contextValue, run.variableValues);
        // No data: the variables were refused before any resolver ran. graphql-js words that
        // refusal (and yoga's executor its 400) differently, so the interpreter answers it.
        const answer = (done: ExecutionResult) =>
          done.data === undefined ? executeFn(run) : asGraphQLJs(done, run.document);
        return result instanceof Promise ? result.then(answer) : answer(result);
      });
    },
  };
}

/**
 * The result as graphql-js builds it. graphql-jit's errors carry `locations` but not the source
 * and positions from which error masking (errors.ts `maskError`, yoga's) rebuilds them, and its
 * results put `errors` after `data`. Remade here, a client gets the same answer, byte for byte,
 * from a compiled operation as from an interpreted one.
 */
function asGraphQLJs(result: ExecutionResult, document: DocumentNode): ExecutionResult {
  if (!result.errors?.length) return { data: result.data ?? null };
  const source = document.loc?.source;
  const errors = result.errors.map((error) =>
    error.constructor === GraphQLError
      ? error
      : new GraphQLError(error.message, {
          ...(source && error.locations
            ? { source, positions: error.locations.map((at) => offsetOf(source.body, at)) }
            : {}),
          path: error.path,
          originalError: error.originalError,
          extensions: error.extensions,
        }),
  );
  return { errors, data: result.data ?? null };
}

/** The offset in `body` of a 1-based line and column, lines ending as graphql-js reads them. */
function offsetOf(body: string, { line, column }: SourceLocation): number {
  const ends = /\r\n|[\n\r]/g;
  let start = 0;
  for (let at = 1; at < line; at++) {
    if (!ends.exec(body)) break;
    start = ends.lastIndex;
  }
  return start + column - 1;
}

/**
 * No variable is inside a list or object literal, fragments included. graphql-jit folds a
 * custom scalar's literal (a JSON argument written inline) once, when it compiles, without the
 * variables: a variable inside it would be read as absent on every compiled run. Such an
 * operation stays interpreted; what clients send (`startTask(input: $input)`) has its variables
 * at the top of an argument.
 */
function literalsAreConstant(document: DocumentNode): boolean {
  let depth = 0;
  let constant = true;
  const nest = { enter: () => void depth++, leave: () => void depth-- };
  visit(document, {
    ListValue: nest,
    ObjectValue: nest,
    Variable() {
      if (depth > 0) constant = false;
    },
  });
  return constant;
}

/** The compiled operation, or null when graphql-jit cannot compile it (it then stays interpreted). */
function compile(args: {
  schema: GraphQLSchema;
  document: DocumentNode;
  operationName?: string | null | undefined;
}): CompiledQuery | null {
  try {
    const compiled = compileQuery(args.schema, args.document, args.operationName ?? undefined);
    return isCompiledQuery(compiled) ? compiled : null;
  } catch {
    return null;
  }
}
