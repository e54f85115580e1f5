import { gql } from '@apollo/client/core';
import type { Plugin } from 'graphql-yoga';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PersistedOperations } from '../../../src/faces/graphql/persisted.js';
import { apolloClient, sha256 } from '../../helpers/apollo.js';
import { startTestApp, type TestApp } from '../../helpers/app.js';

/**
 * Automatic persisted queries (docs/clients.md), as Apollo Client's own PersistedQueryLink
 * speaks them over HTTP and graphql-ws: the hash first, the document once on a miss, and only
 * the hash after that.
 */

const START = gql`
  mutation Start($input: StartTaskInput!) {
    startTask(input: $input) {
      id
      status
    }
  }
`;
const POLL = gql`
  query Poll($id: ID!) {
    task(id: $id) {
      id
      status
      version
    }
  }
`;
const FOLLOW = gql`
  subscription Follow($id: ID!) {
    taskUpdated(id: $id) {
      id
      status
      version
    }
  }
`;

let t: TestApp;
let token: string;
/** For each operation executed from a POST: whether the direct path ran it (its Request has no body). */
const direct: boolean[] = [];
const recordDirect: Plugin = {
  onExecute({ args }) {
    const request = (args.contextValue as { request?: Request }).request;
    if (request?.method === 'POST') direct.push(request.body === null);
  },
};

beforeAll(async () => {
  t = await startTestApp({ graphqlPlugins: [recordDirect] });
  token = await t.token('alice');
});
afterAll(() => t?.stop());

/** start → poll twice → subscribe to the end, as an application does it. */
async function startPollSubscribe(apollo: ReturnType<typeof apolloClient>) {
  const started = await apollo.client.mutate({
    mutation: START,
    variables: { input: { kind: 'sleep', input: { ms: 50, steps: 2 } } },
  });
  const id = (started.data as any).startTask.id as string;
  for (let poll = 0; poll < 2; poll++) {
    const polled = await apollo.client.query({
      query: POLL,
      variables: { id },
      fetchPolicy: 'network-only',
    });
    expect((polled.data as any).task.id).toBe(id);
  }
  const statuses = await new Promise<string[]>((resolve, reject) => {
    const seen: string[] = [];
    apollo.client.subscribe({ query: FOLLOW, variables: { id } }).subscribe({
      next: (result) =>
        result.error ? reject(result.error) : seen.push((result.data as any).taskUpdated.status),
      error: reject,
      complete: () => resolve(seen),
    });
  });
  return { id, statuses };
}

describe('Apollo Client with automatic persisted queries', () => {
  it('completes start → poll → subscribe, sending each document once, then hashes only', async () => {
    const first = apolloClient({ url: t.url, wsUrl: t.wsUrl, token });
    try {
      const { statuses } = await startPollSubscribe(first);
      expect(statuses.at(-1)).toBe('COMPLETED');
      const byOperation = (name: string) =>
        first.requests
          .filter((r) => r.operationName === name)
          .map((r) => [r.withQuery ? 'document' : 'hash', r.status]);
      // The first use of a document: its hash, unknown (404), then the document with it.
      expect(byOperation('Start')).toEqual([
        ['hash', 404],
        ['document', 200],
      ]);
      // The second poll is the hash alone, and the server knows it.
      expect(byOperation('Poll')).toEqual([
        ['hash', 404],
        ['document', 200],
        ['hash', 200],
      ]);
      expect(first.requests.every((r) => r.hash !== undefined)).toBe(true);
      // graphql-ws carries the hash beside the document (Apollo's GraphQLWsLink sends both).
      expect(first.frames).toHaveLength(1);
      expect(first.frames[0]!.extensions?.persistedQuery).toEqual({
        version: 1,
        sha256Hash: sha256(first.frames[0]!.query),
      });
    } finally {
      await first.dispose();
    }

    // Another client, later: every request the hash alone, every one served.
    const second = apolloClient({ url: t.url, wsUrl: t.wsUrl, token });
    try {
      const { statuses } = await startPollSubscribe(second);
      expect(statuses.at(-1)).toBe('COMPLETED');
      expect(second.requests.map((r) => [r.withQuery, r.status])).toEqual([
        [false, 200],
        [false, 200],
        [false, 200],
      ]);
    } finally {
      await second.dispose();
    }
  });

  it('takes hashed queries over GET, with the document once', async () => {
    const apollo = apolloClient({
      url: t.url,
      wsUrl: t.wsUrl,
      token,
      useGETForHashedQueries: true,
    });
    try {
      const query = gql`
        query Kinds {
          taskKinds {
            name
          }
        }
      `;
      for (let i = 0; i < 2; i++) await apollo.client.query({ query, fetchPolicy: 'network-only' });
      expect(apollo.requests.map((r) => [r.method, r.withQuery, r.status])).toEqual([
        ['GET', false, 404],
        ['POST', true, 200],
        ['GET', false, 200],
      ]);
    } finally {
      await apollo.dispose();
    }
  });
});

/** POSTs `body` as JSON with alice's token. */
async function post(body: unknown, accept = 'application/json') {
  const response = await fetch(`${t.url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept, authorization: `Bearer ${token}` },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as any };
}
const persisted = (document: string) => ({
  persistedQuery: { version: 1, sha256Hash: sha256(document) },
});

describe('the wire', () => {
  it('serves a registered hash on the direct POST path', async () => {
    const query = '{ taskKinds { name description } }';
    direct.length = 0;
    expect((await post({ query, extensions: persisted(query) })).status).toBe(200);
    const { status, body } = await post({ extensions: persisted(query) });
    expect(status).toBe(200);
    expect(body.data.taskKinds.length).toBeGreaterThan(0);
    expect(direct).toEqual([true, true]);
  });

  it('answers an unknown hash PERSISTED_QUERY_NOT_FOUND, 404, in both JSON types', async () => {
    for (const accept of ['application/json', 'application/graphql-response+json']) {
      const { status, body } = await post({ extensions: persisted('{ nothing }') }, accept);
      expect(status).toBe(404);
      expect(body).toEqual({
        errors: [
          { message: 'PersistedQueryNotFound', extensions: { code: 'PERSISTED_QUERY_NOT_FOUND' } },
        ],
      });
    }
  });

  it('refuses a document sent with another document’s hash, and registers nothing', async () => {
    const query = '{ __typename }';
    const other = '{ taskKinds { name } }';
    const { status, body } = await post({ query, extensions: persisted(other) });
    expect(status).toBe(400);
    expect(body.errors[0].extensions).toEqual({ code: 'PERSISTED_QUERY_MISMATCH' });
    expect((await post({ extensions: persisted(other) })).status).toBe(404);
  });

  it('refuses a request with neither a document nor a hash, with a code', async () => {
    const { status, body } = await post({ variables: {} });
    expect(status).toBe(400);
    expect(body.errors[0].extensions.code).toBe('BAD_REQUEST');
  });

  it('over graphql-ws, registers a document sent with its hash and takes the hash alone after', async () => {
    const query = 'subscription($id: ID!) { taskUpdated(id: $id) { id status } }';
    const started = await t.gql(
      'mutation { startTask(input: { kind: "sleep", input: { ms: 1 } }) { id } }',
      {},
      token,
    );
    const id = started.data.startTask.id;
    const client = t.ws(token);
    const hashOnly = { query: '', variables: { id }, extensions: persisted(query) };
    // graphql-ws hands the operation's `error` message to `error`: its list of errors.
    const refused = await new Promise<any>((resolve) =>
      client.subscribe(hashOnly, { next: resolve, error: resolve, complete: () => {} }),
    );
    expect(refused).toEqual([
      {
        message: 'PersistedQueryNotFound',
        extensions: { code: 'PERSISTED_QUERY_NOT_FOUND' },
      },
    ]);
    const registering = await new Promise<any[]>((resolve, reject) => {
      const events: any[] = [];
      client.subscribe(
        { query, variables: { id }, extensions: persisted(query) },
        { next: (v) => events.push(v), error: reject, complete: () => resolve(events) },
      );
    });
    expect(registering.at(-1).data.taskUpdated.status).toBe('COMPLETED');
    const served = await new Promise<any[]>((resolve, reject) => {
      const events: any[] = [];
      client.subscribe(hashOnly, {
        next: (v) => events.push(v),
        error: reject,
        complete: () => resolve(events),
      });
    });
    expect(served.at(-1)).toEqual({ data: { taskUpdated: { id, status: 'COMPLETED' } } });
  });
});

describe('GRAPHQL_APQ_CACHE_BYTES=0', () => {
  it('registers nothing: a hash alone stays unknown', async () => {
    const off = await startTestApp({ env: { GRAPHQL_APQ_CACHE_BYTES: '0' } });
    try {
      const alice = await off.token('alice');
      const query = '{ __typename }';
      const send = (body: unknown) =>
        fetch(`${off.url}/graphql`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${alice}` },
          body: JSON.stringify(body),
        });
      expect((await send({ query, extensions: persisted(query) })).status).toBe(200);
      expect((await send({ extensions: persisted(query) })).status).toBe(404);
    } finally {
      await off.stop();
    }
  });
});

describe('registered documents', () => {
  it('stay within GRAPHQL_APQ_CACHE_BYTES, the least recently used leaving first', async () => {
    const operations = new PersistedOperations(
      { only: false, manifest: undefined, adHocForAdmins: false, apqCacheBytes: 1_048_576 },
      undefined as never, // consulted only for admins' ad-hoc documents in persisted-only mode
    );
    const never = () => false;
    // 40 distinct documents of ~100 KB: four times the bound.
    const documents = Array.from(
      { length: 40 },
      (_, i) => `{ ${`__typename `.repeat(9_000)}# ${i}\n}`,
    );
    for (const query of documents)
      await operations.resolve({ query, extensions: persisted(query) }, never);
    const known: number[] = [];
    for (const [i, query] of documents.entries()) {
      const found = await operations.resolve({ extensions: persisted(query) }, never).then(
        (params) => params.query === query,
        () => false,
      );
      if (found) known.push(i);
    }
    // About a megabyte's worth, and the newest.
    expect(known.length).toBeGreaterThanOrEqual(8);
    expect(known.length).toBeLessThanOrEqual(10);
    expect(known.at(-1)).toBe(39);
    expect(known).toEqual(Array.from({ length: known.length }, (_, i) => 40 - known.length + i));
  });
});
