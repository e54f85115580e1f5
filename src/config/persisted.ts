import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { bool, ConfigError, type Env, int, str } from './env.js';

/** Persisted operations on `/graphql` (docs/clients.md). */
export interface PersistedOperationsConfig {
  /**
   * `GRAPHQL_PERSISTED_ONLY`: only documents `manifest` lists run; any other is refused with
   * PERSISTED_QUERY_ONLY. @default false
   */
  only: boolean;
  /**
   * `GRAPHQL_PERSISTED_MANIFEST`, read at start: sha256 hex of a document → the document, as
   * graphql-codegen's client preset writes `persisted-documents.json`. Without `only`, its
   * documents answer hash-only requests from the first one on, beside the ones APQ registers.
   */
  manifest: ReadonlyMap<string, string> | undefined;
  /**
   * `GRAPHQL_PERSISTED_GRAPHIQL`: with `only`, GraphiQL is served all the same and a token with
   * `tasks:admin` may run any document (GraphiQL's own included). @default false
   */
  adHocForAdmins: boolean;
  /**
   * `GRAPHQL_APQ_CACHE_BYTES`: how many bytes of documents automatic persisted queries keep
   * (least recently used go first); 0 turns APQ's registration off. @default 8 MiB
   */
  apqCacheBytes: number;
}

const MIB = 1_048_576;
const SHA256_HEX = /^[0-9a-f]{64}$/;

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/**
 * Reads a manifest in graphql-codegen's `persisted-documents.json` shape: one JSON object whose
 * keys are the sha256 hex of their values, each a GraphQL document.
 */
function manifest(path: string): ReadonlyMap<string, string> {
  const name = 'GRAPHQL_PERSISTED_MANIFEST';
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'unreadable';
    throw new ConfigError(name, `cannot read ${JSON.stringify(path)} (${code})`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new ConfigError(name, `${JSON.stringify(path)} is not JSON`);
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed))
    throw new ConfigError(
      name,
      `${JSON.stringify(path)} is not a JSON object of { "<sha256 hex>": "<document>" }`,
    );
  const documents = new Map<string, string>();
  for (const [hash, document] of Object.entries(parsed)) {
    if (typeof document !== 'string' || document.trim() === '')
      throw new ConfigError(name, `the entry ${JSON.stringify(hash)} is not a document (a string)`);
    if (!SHA256_HEX.test(hash) || sha256(document) !== hash)
      throw new ConfigError(
        name,
        `the key ${JSON.stringify(hash)} is not the sha256 hex of its document ` +
          "(graphql-codegen's client preset: persistedDocuments: { hashAlgorithm: 'sha256' })",
      );
    documents.set(hash, document);
  }
  if (documents.size === 0)
    throw new ConfigError(name, `${JSON.stringify(path)} lists no documents`);
  return documents;
}

/** The GRAPHQL_PERSISTED_* and GRAPHQL_APQ_* variables. */
export function persistedOperationsConfig(env: Env): PersistedOperationsConfig {
  const only = bool(env, 'GRAPHQL_PERSISTED_ONLY') ?? false;
  const path = str(env, 'GRAPHQL_PERSISTED_MANIFEST');
  if (only && path === undefined)
    throw new ConfigError(
      'GRAPHQL_PERSISTED_MANIFEST',
      'GRAPHQL_PERSISTED_ONLY=true needs the path of the documents it lets run',
    );
  return Object.freeze({
    only,
    manifest: path === undefined ? undefined : manifest(path),
    adHocForAdmins: bool(env, 'GRAPHQL_PERSISTED_GRAPHIQL') ?? false,
    apqCacheBytes: int(env, 'GRAPHQL_APQ_CACHE_BYTES', 8 * MIB, 0, 1_024 * MIB),
  });
}
