import { createHash } from 'node:crypto';
import {
  defaultExtractPersistedOperationId,
  usePersistedOperations,
} from '@graphql-yoga/plugin-persisted-operations';
import { type GraphQLSchema, parse, validate } from 'graphql';
import { createGraphQLError, type GraphQLParams, type Plugin } from 'graphql-yoga';
import { LRUCache } from 'lru-cache';
import { authenticate } from '../../auth/authenticate.js';
import { hasScope, SCOPES } from '../../auth/principal.js';
import type { TokenVerifier } from '../../auth/tokens.js';
import { ConfigError, type PersistedOperationsConfig } from '../../config/config.js';

/**
 * Persisted operations on `/graphql` (docs/clients.md), on every path an operation takes: yoga
 * (`plugin`), the direct POST path and the WebSocket (`resolve`, which they call themselves,
 * as neither runs yoga's `onParams`).
 * - By default, Apollo's automatic persisted queries: a request may carry
 *   `extensions.persistedQuery { version: 1, sha256Hash }` without its document, which is
 *   looked up (PERSISTED_QUERY_NOT_FOUND, 404, when unknown: the client sends it again with
 *   the document, which registers it). A manifest's documents are known from the start.
 * - `only` (GRAPHQL_PERSISTED_ONLY): the manifest's documents alone run; a request with any
 *   other document gets PERSISTED_QUERY_ONLY (400), but for an admin's with
 *   GRAPHQL_PERSISTED_GRAPHIQL.
 * Yoga's persisted-operations plugin does the lookup and the refusals; what APQ adds to it,
 * registering a document sent with its hash, is here (yoga's own APQ plugin has not followed
 * graphql-yoga 5's dependencies).
 */

type PersistedQueryErrorCode =
  | 'PERSISTED_QUERY_NOT_FOUND'
  | 'PERSISTED_QUERY_ONLY'
  | 'PERSISTED_QUERY_MISMATCH';

/** A refusal as yoga answers it, with its status; the WebSocket sends it without (ws.ts). */
function refusal(code: PersistedQueryErrorCode | 'BAD_REQUEST', message: string, status: number) {
  return createGraphQLError(message, { extensions: { code, http: { status } } });
}

/** APQ's documents, bounded in bytes and entries (DESIGN §12). */
const MAX_APQ_DOCUMENTS = 10_000;

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/** GraphQL-over-HTTP params as they arrive; over graphql-ws `query` is `''` when hash-only. */
export interface OperationParams {
  query?: string | null | undefined;
  operationName?: string | null | undefined;
  variables?: Record<string, unknown> | null | undefined;
  extensions?: Record<string, unknown> | null | undefined;
}
/** The same params, with the document to run. */
export type Resolved<P extends OperationParams> = Omit<P, 'query'> & { query: string };

function withoutQuery<P extends OperationParams>(params: P): P {
  const { query: _sent, ...rest } = params;
  return rest as P;
}

export class PersistedOperations {
  /** The yoga plugin: persisted operations for what yoga serves itself. */
  readonly plugin: Plugin;
  private readonly lookup: Plugin;
  private readonly registered: LRUCache<string, string> | undefined;

  constructor(
    private readonly config: PersistedOperationsConfig,
    private readonly verifier: TokenVerifier,
  ) {
    this.registered =
      config.only || config.apqCacheBytes === 0
        ? undefined
        : new LRUCache<string, string>({
            max: MAX_APQ_DOCUMENTS,
            maxSize: config.apqCacheBytes,
            sizeCalculation: (document, hash) => Buffer.byteLength(document) + hash.length,
          });
    this.lookup = usePersistedOperations({
      allowArbitraryOperations: !config.only,
      getPersistedOperation: (hash) =>
        config.manifest?.get(hash) ?? this.registered?.get(hash) ?? null,
      customErrors: {
        // APQ's message and code: clients (Apollo's PersistedQueryLink, urql) match either.
        notFound: () => refusal('PERSISTED_QUERY_NOT_FOUND', 'PersistedQueryNotFound', 404),
        persistedQueryOnly: () =>
          refusal(
            'PERSISTED_QUERY_ONLY',
            'Only persisted operations run here: send the sha256Hash of a listed document in extensions.persistedQuery.',
            400,
          ),
        keyNotFound: () =>
          refusal(
            'BAD_REQUEST',
            'Send a query, or extensions.persistedQuery { version: 1, sha256Hash }.',
            400,
          ),
      },
    });
    this.plugin = {
      onParams: async ({ params, request, setParams }) => {
        setParams((await this.resolveRequest(params, request)) as GraphQLParams);
      },
    };
  }

  /**
   * The params to execute: the document a hash names put in, a document sent with its hash
   * registered (APQ) or checked against the manifest. Throws the coded refusal (a GraphQLError
   * whose `extensions.http.status` yoga answers with). `admin` says whether the caller holds
   * `tasks:admin`, asked only when an ad-hoc document meets GRAPHQL_PERSISTED_GRAPHIQL.
   */
  async resolve<P extends OperationParams>(
    incoming: P,
    admin: () => boolean | Promise<boolean>,
  ): Promise<Resolved<P>> {
    let params = incoming;
    const hash = defaultExtractPersistedOperationId(
      params as GraphQLParams,
      undefined as never,
      {},
    );
    if (hash !== null && params.query === '') params = withoutQuery(params);
    if (hash !== null && params.query) {
      if (sha256(params.query) !== hash)
        throw refusal(
          'PERSISTED_QUERY_MISMATCH',
          'The document’s sha256 is not extensions.persistedQuery.sha256Hash.',
          400,
        );
      if (this.config.manifest?.has(hash)) params = withoutQuery(params);
      else this.registered?.set(hash, params.query);
    }
    if (params.query && this.config.only && this.config.adHocForAdmins && (await admin()))
      return params as Resolved<P>;
    // The plugin leaves a document it lets run as it is, and puts in the one a hash names.
    await this.lookup.onParams?.({
      params,
      setParams: (next: GraphQLParams) => {
        params = { ...params, query: next.query };
      },
      request: undefined as never,
      context: {},
    } as never);
    return params as Resolved<P>;
  }

  /** `resolve` for an HTTP request, whose bearer token says whether it is an admin's. */
  resolveRequest<P extends OperationParams>(incoming: P, request: Request): Promise<Resolved<P>> {
    return this.resolve(incoming, async () => {
      const auth = await authenticate(this.verifier, request.headers.get('authorization'));
      return hasScope(auth.principal, SCOPES.admin);
    });
  }
}

/**
 * Every manifest document parses and validates against `schema`: a manifest built for another
 * version of the schema stops the start, rather than failing its clients one by one.
 */
export function checkManifest(
  manifest: ReadonlyMap<string, string> | undefined,
  schema: GraphQLSchema,
): void {
  for (const [hash, document] of manifest ?? []) {
    let problem: string | undefined;
    try {
      problem = validate(schema, parse(document))[0]?.message;
    } catch (err) {
      problem = (err as Error).message;
    }
    if (problem !== undefined)
      throw new ConfigError(
        'GRAPHQL_PERSISTED_MANIFEST',
        `the document ${hash.slice(0, 12)}… does not fit this server's schema: ${problem}`,
      );
  }
}
