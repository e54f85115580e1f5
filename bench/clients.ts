import type { LoadOptions } from './load.js';

/**
 * The requests mainstream GraphQL clients send, so the benchmark measures what their users
 * get: Apollo Client 4 and graphql-http POST everything; urql 4 POSTs mutations and sends
 * queries as GET (within the URL limit), each with its own Accept header.
 */
export interface ClientShape {
  name: string;
  accept: string;
  /** Queries over GET. */
  getQueries: boolean;
}

export const CLIENTS: readonly ClientShape[] = [
  {
    name: 'Apollo Client 4',
    accept: 'application/graphql-response+json,application/json;q=0.9',
    getQueries: false,
  },
  {
    name: 'graphql-http',
    accept: 'application/graphql-response+json, application/json',
    getQueries: false,
  },
  {
    name: 'urql',
    accept:
      'application/graphql-response+json, application/graphql+json, application/json, text/event-stream, multipart/mixed',
    getQueries: true,
  },
];

/** `load` options for one operation as `client` sends it to `/graphql` of `baseUrl`. */
export function clientRequest(
  client: ClientShape,
  baseUrl: string,
  token: string,
  operation: { query: string; variables: Record<string, unknown>; isQuery: boolean },
): Pick<LoadOptions, 'url' | 'method' | 'headers' | 'body'> {
  const headers = { accept: client.accept, authorization: `Bearer ${token}` };
  if (operation.isQuery && client.getQueries) {
    const search = new URLSearchParams({
      query: operation.query,
      variables: JSON.stringify(operation.variables),
    });
    return { url: `${baseUrl}/graphql?${search}`, method: 'GET', headers };
  }
  return {
    url: `${baseUrl}/graphql`,
    method: 'POST',
    headers: { ...headers, 'content-type': 'application/json' },
    body: JSON.stringify({ query: operation.query, variables: operation.variables }),
  };
}
