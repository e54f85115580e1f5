import { EnvelopArmorPlugin } from '@escape.tech/graphql-armor';
import {
  type DocumentNode,
  GraphQLError,
  type GraphQLErrorOptions,
  Kind,
  NoSchemaIntrospectionCustomRule,
  type ParseOptions,
  type Source,
  type ValidationContext,
  visit,
} from 'graphql';
import { Parser } from 'graphql/language/parser.js';
import type { Plugin } from 'graphql-yoga';
import { LRUCache } from 'lru-cache';
import type { Limits } from '../../config/config.js';

/**
 * DESIGN §12 for GraphQL, as envelop plugins, so they hold on every path a document takes
 * (yoga's HTTP handling, the direct POST path, WebSockets): a token limit inside the parser,
 * depth/alias/directive limits (graphql-armor) and introspection as validation rules, all
 * refused with GRAPHQL_VALIDATION_FAILED before execution; a code on every error.
 */

export type GraphQLLimits = Pick<
  Limits,
  | 'graphqlMaxDepth'
  | 'graphqlMaxAliases'
  | 'graphqlMaxTokens'
  | 'graphqlMaxDirectives'
  | 'graphqlIntrospection'
>;

/**
 * Nesting (selection sets, lists, input objects) that graphql-js's recursive parser and
 * validators are sure to survive; anything deeper is refused before validation runs.
 */
const MAX_NESTING = 256;
const VALIDATION_FAILED = { code: 'GRAPHQL_VALIDATION_FAILED' };
const tokensOf = new WeakMap<DocumentNode, number>();

function refusal(message: string, options: GraphQLErrorOptions = {}): GraphQLError {
  return new GraphQLError(message, {
    ...options,
    extensions: { ...VALIDATION_FAILED, http: { status: 400 } },
  });
}

function nestingOf(document: DocumentNode): number {
  let depth = 0;
  let deepest = 0;
  const nest = {
    enter: () => {
      depth += 1;
      deepest = Math.max(deepest, depth);
    },
    leave: () => {
      depth -= 1;
    },
  };
  // visit() keeps its own stack: it cannot overflow on what the parser accepted.
  visit(document, {
    [Kind.SELECTION_SET]: nest,
    [Kind.LIST]: nest,
    [Kind.OBJECT]: nest,
  });
  return deepest;
}

/** graphql-js's parser with `maxTokens`: a long document is stopped as it is read. */
export function parseLimited(maxTokens: number) {
  return (source: string | Source, options?: ParseOptions): DocumentNode => {
    const parser = new Parser(source, { ...options, maxTokens });
    let document: DocumentNode;
    try {
      document = parser.parseDocument();
    } catch (err) {
      if (err instanceof GraphQLError) {
        // graphql-js: "Document contains more that N tokens" (sic).
        if (/more th(?:an|at) \d+ tokens/.test(err.message))
          throw refusal(`The document has more than GRAPHQL_MAX_TOKENS (${maxTokens}) tokens.`);
        throw err; // a syntax error: yoga answers it with GRAPHQL_PARSE_FAILED
      }
      if (err instanceof RangeError) throw refusal('The document is nested too deeply to parse.');
      throw err;
    }
    if (nestingOf(document) > MAX_NESTING)
      throw refusal(`The document is nested deeper than ${MAX_NESTING} levels.`);
    tokensOf.set(document, parser.tokenCount);
    return document;
  };
}

/** Armor reports through the validation context, under our code and without its "Syntax Error:" prefix. */
const report = (context: ValidationContext | null, error: GraphQLError): void => {
  context?.reportError(
    new GraphQLError(error.message.replace(/^Syntax Error: /, ''), {
      extensions: VALIDATION_FAILED,
    }),
  );
};
const rejecting = { propagateOnRejection: false, onReject: [report] };

/** Every plugin of §12's GraphQL rows. */
export function limitPlugins(limits: GraphQLLimits, production: boolean): Plugin[] {
  const parse = parseLimited(limits.graphqlMaxTokens);
  return [
    { onParse: ({ setParseFn }) => setParseFn(parse) },
    EnvelopArmorPlugin({
      costLimit: { enabled: false },
      maxTokens: { enabled: false }, // graphql-js's own maxTokens, above: cheaper than armor's lexer proxy
      // The depth limit covers introspection too (its own query fits in 20 levels); a
      // fragment counts for the fields it holds, not as a level of its own.
      maxDepth: {
        n: limits.graphqlMaxDepth,
        ignoreIntrospection: false,
        flattenFragments: true,
        ...rejecting,
      },
      maxAliases: { n: limits.graphqlMaxAliases, ...rejecting },
      maxDirectives: { n: limits.graphqlMaxDirectives, ...rejecting },
      blockFieldSuggestion: { enabled: production, mask: '' },
    }),
    ...(limits.graphqlIntrospection
      ? []
      : [
          {
            onValidate: ({ addValidationRule }) =>
              addValidationRule(NoSchemaIntrospectionCustomRule),
          } satisfies Plugin,
        ]),
  ];
}

/** Retained heap of a parsed document, as measured by bench/hostile-heap.ts: tokens dominate. */
const BYTES_PER_TOKEN = 600;
/** What the parse cache may hold in all, estimated as above. */
const DOCUMENT_CACHE_BYTES = 32 * 1_048_576;

/**
 * yoga's parse caches bounded in bytes as well as entries (its own keep 1 024 of any size for
 * an hour): documents weighed by their tokens and source, refused documents by their source.
 * Validation results hang off the cached documents (a WeakMap in yoga), so they follow.
 */
export function boundedParseCaches() {
  return {
    documentCache: new LRUCache<string, DocumentNode>({
      max: 1_024,
      ttl: 3_600_000,
      maxSize: DOCUMENT_CACHE_BYTES,
      sizeCalculation: (document, source) =>
        Math.max(
          1,
          2 * source.length + BYTES_PER_TOKEN * (tokensOf.get(document) ?? source.length),
        ),
    }),
    errorCache: new LRUCache<string, Error>({
      max: 256,
      ttl: 3_600_000,
      maxSize: 4 * 1_048_576,
      sizeCalculation: (_error, source) => Math.max(1, 2 * source.length + 1_024),
    }),
  };
}
