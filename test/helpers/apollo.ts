import { createHash } from 'node:crypto';
import { ApolloClient, ApolloLink, HttpLink, InMemoryCache } from '@apollo/client/core';
import { PersistedQueryLink } from '@apollo/client/link/persisted-queries';
import { GraphQLWsLink } from '@apollo/client/link/subscriptions';
import { getMainDefinition } from '@apollo/client/utilities';
import { createClient } from 'graphql-ws';
import WebSocket from 'ws';

/** One request Apollo Client sent over HTTP, as the server received it, and its answer. */
export interface SentRequest {
  method: string;
  operationName: string | undefined;
  /** Whether the request carried the document itself. */
  withQuery: boolean;
  /** `extensions.persistedQuery.sha256Hash`, when sent. */
  hash: string | undefined;
  status: number;
}

export const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/**
 * Apollo Client 4 as an application builds it with automatic persisted queries: Apollo's own
 * `PersistedQueryLink` in front of an `HttpLink` for queries and mutations and a `GraphQLWsLink`
 * (graphql-ws) for subscriptions. It records every HTTP request (`requests`) and every
 * graphql-ws `subscribe` message (`frames`) it sends.
 */
export function apolloClient(options: {
  url: string;
  wsUrl: string;
  token: string;
  /** Hashed queries over GET (PersistedQueryLink's `useGETForHashedQueries`). @default false */
  useGETForHashedQueries?: boolean;
}) {
  const requests: SentRequest[] = [];
  const frames: Array<{ query: string; extensions?: Record<string, any> }> = [];

  const recordingFetch: typeof fetch = async (input, init) => {
    const url = new URL(String(input));
    const body =
      init?.body !== undefined
        ? JSON.parse(String(init.body))
        : {
            query: url.searchParams.get('query') ?? undefined,
            operationName: url.searchParams.get('operationName') ?? undefined,
            extensions: JSON.parse(url.searchParams.get('extensions') ?? '{}'),
          };
    const response = await fetch(input, init);
    requests.push({
      method: init?.method ?? 'GET',
      operationName: body.operationName ?? undefined,
      withQuery: typeof body.query === 'string',
      hash: body.extensions?.persistedQuery?.sha256Hash,
      status: response.status,
    });
    return response;
  };

  class RecordingWebSocket extends WebSocket {
    override send(data: any, ...rest: any[]): void {
      const message = JSON.parse(String(data));
      if (message.type === 'subscribe') frames.push(message.payload);
      (super.send as (...args: unknown[]) => void)(data, ...rest);
    }
  }

  const ws = createClient({
    url: options.wsUrl,
    webSocketImpl: RecordingWebSocket,
    lazy: true,
    retryAttempts: 0,
    connectionParams: { authorization: `Bearer ${options.token}` },
  });
  const http = new HttpLink({
    uri: `${options.url}/graphql`,
    fetch: recordingFetch,
    headers: { authorization: `Bearer ${options.token}` },
  });
  const link = ApolloLink.from([
    new PersistedQueryLink({
      sha256,
      useGETForHashedQueries: options.useGETForHashedQueries ?? false,
    }),
    ApolloLink.split(
      ({ query }) => {
        const definition = getMainDefinition(query);
        return definition.kind === 'OperationDefinition' && definition.operation === 'subscription';
      },
      new GraphQLWsLink(ws),
      http,
    ),
  ]);
  const client = new ApolloClient({ link, cache: new InMemoryCache() });
  return {
    client,
    requests,
    frames,
    async dispose() {
      client.stop();
      await ws.dispose();
    },
  };
}
