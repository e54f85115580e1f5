import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gql } from '@apollo/client/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../../src/app.js';
import { loadConfig } from '../../../src/config/config.js';
import { apolloClient, sha256 } from '../../helpers/apollo.js';
import { ADMIN_SCOPES, refusalOf, SECRET, startTestApp, type TestApp } from '../../helpers/app.js';

/**
 * GRAPHQL_PERSISTED_ONLY with a manifest in graphql-codegen's `persisted-documents.json` shape
 * (docs/clients.md): the listed documents run by their hash, over POST, GET and graphql-ws;
 * any other document is refused with a code, GraphiQL's included unless GRAPHQL_PERSISTED_GRAPHIQL.
 */

const START = 'mutation Start($input: StartTaskInput!) { startTask(input: $input) { id status } }';
const POLL = 'query Poll($id: ID!) { task(id: $id) { id status } }';
const FOLLOW = 'subscription Follow($id: ID!) { taskUpdated(id: $id) { id status } }';
const AD_HOC = '{ tasks(first: 1) { edges { cursor } } }';

const dir = mkdtempSync(join(tmpdir(), 'taskhandle-manifest-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
/** Writes a manifest file and returns its path. */
function manifestFile(name: string, content: unknown): string {
  const path = join(dir, name);
  writeFileSync(path, typeof content === 'string' ? content : JSON.stringify(content));
  return path;
}
const MANIFEST = manifestFile(
  'persisted-documents.json',
  Object.fromEntries([START, POLL, FOLLOW].map((document) => [sha256(document), document])),
);
const hashed = (document: string) => ({
  persistedQuery: { version: 1, sha256Hash: sha256(document) },
});

async function send(t: TestApp, token: string, body: Record<string, unknown>) {
  const response = await fetch(`${t.url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as any };
}

/** The first result or error list of one graphql-ws operation, and every result to its end. */
function wsRun(t: TestApp, token: string, payload: Record<string, unknown>) {
  return new Promise<{ results: any[]; errors?: any }>((resolve) => {
    const results: any[] = [];
    t.ws(token).subscribe(payload as never, {
      next: (value) => results.push(value),
      error: (errors) => resolve({ results, errors }),
      complete: () => resolve({ results }),
    });
  });
}

const ONLY_REFUSAL = {
  message:
    'Only persisted operations run here: send the sha256Hash of a listed document in extensions.persistedQuery.',
  extensions: { code: 'PERSISTED_QUERY_ONLY' },
};

describe('persisted-only mode', () => {
  let t: TestApp;
  let alice: string;
  let admin: string;
  beforeAll(async () => {
    t = await startTestApp({
      env: { GRAPHQL_PERSISTED_ONLY: 'true', GRAPHQL_PERSISTED_MANIFEST: MANIFEST },
    });
    alice = await t.token('alice');
    admin = await t.token('root', ADMIN_SCOPES);
  });
  afterAll(() => t?.stop());

  it('runs the listed documents by hash: start over POST, poll over GET, follow over graphql-ws', async () => {
    const started = await send(t, alice, {
      variables: { input: { kind: 'sleep', input: { ms: 1 } } },
      extensions: hashed(START),
    });
    expect(started.status).toBe(200);
    const { id } = started.body.data.startTask;
    const search = new URLSearchParams({
      variables: JSON.stringify({ id }),
      extensions: JSON.stringify(hashed(POLL)),
    });
    const polled = await fetch(`${t.url}/graphql?${search}`, {
      headers: { authorization: `Bearer ${alice}` },
    });
    expect(polled.status).toBe(200);
    expect(((await polled.json()) as any).data.task.id).toBe(id);
    // graphql-ws wants a string `query`: '' with the hash, or the document with it (Apollo's link).
    for (const query of ['', FOLLOW]) {
      const followed = await wsRun(t, alice, {
        query,
        variables: { id },
        extensions: hashed(FOLLOW),
      });
      expect(followed.errors).toBeUndefined();
      expect(followed.results.at(-1)).toEqual({
        data: { taskUpdated: { id, status: 'COMPLETED' } },
      });
    }
  });

  it('refuses any other document with PERSISTED_QUERY_ONLY, 400, on every path', async () => {
    const posted = await send(t, alice, { query: AD_HOC });
    expect(posted).toEqual({ status: 400, body: { errors: [ONLY_REFUSAL] } });
    const got = await fetch(`${t.url}/graphql?query=${encodeURIComponent(AD_HOC)}`, {
      headers: { authorization: `Bearer ${alice}` },
    });
    expect(got.status).toBe(400);
    expect(await got.json()).toEqual({ errors: [ONLY_REFUSAL] });
    // With its own hash, as an APQ client retries: still not listed.
    expect(await send(t, alice, { query: AD_HOC, extensions: hashed(AD_HOC) })).toEqual({
      status: 400,
      body: { errors: [ONLY_REFUSAL] },
    });
    expect(await wsRun(t, alice, { query: AD_HOC })).toEqual({
      results: [],
      errors: [ONLY_REFUSAL],
    });
  });

  it('answers a hash it does not list PERSISTED_QUERY_NOT_FOUND, 404', async () => {
    const { status, body } = await send(t, alice, { extensions: hashed(AD_HOC) });
    expect(status).toBe(404);
    expect(body.errors).toEqual([
      { message: 'PersistedQueryNotFound', extensions: { code: 'PERSISTED_QUERY_NOT_FOUND' } },
    ]);
  });

  it('refuses an admin’s ad-hoc document too, and serves no GraphiQL', async () => {
    expect((await send(t, admin, { query: AD_HOC })).status).toBe(400);
    const page = await fetch(`${t.url}/graphql`, { headers: { accept: 'text/html' } });
    expect(page.status).toBe(406);
  });

  it('refuses Apollo Client’s document that the manifest does not list, after its one retry', async () => {
    const apollo = apolloClient({ url: t.url, wsUrl: t.wsUrl, token: alice });
    try {
      const error = await apollo.client
        .query({ query: gql(AD_HOC), fetchPolicy: 'network-only' })
        .then(
          () => undefined,
          (err) => err,
        );
      expect(error?.errors?.[0]?.extensions?.code).toBe('PERSISTED_QUERY_ONLY');
      expect(apollo.requests.map((r) => [r.withQuery, r.status])).toEqual([
        [false, 404],
        [true, 400],
      ]);
    } finally {
      await apollo.dispose();
    }
  });
});

describe('persisted-only mode with GRAPHQL_PERSISTED_GRAPHIQL=true', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({
      env: {
        GRAPHQL_PERSISTED_ONLY: 'true',
        GRAPHQL_PERSISTED_MANIFEST: MANIFEST,
        GRAPHQL_PERSISTED_GRAPHIQL: 'true',
      },
    });
  });
  afterAll(() => t?.stop());

  it('serves GraphiQL, and runs an admin’s ad-hoc documents, over HTTP and graphql-ws', async () => {
    const page = await fetch(`${t.url}/graphql`, { headers: { accept: 'text/html' } });
    expect(page.status).toBe(200);
    expect(await page.text()).toMatch(/graphiql/i);
    const admin = await t.token('root', ADMIN_SCOPES);
    const posted = await send(t, admin, { query: AD_HOC });
    expect(posted.status).toBe(200);
    expect(posted.body.errors).toBeUndefined();
    const overWs = await wsRun(t, admin, { query: AD_HOC });
    expect(overWs.errors).toBeUndefined();
    expect(overWs.results[0].data.tasks.edges).toEqual([]);
  });

  it('still refuses everyone else’s', async () => {
    const alice = await t.token('alice');
    expect(await send(t, alice, { query: AD_HOC })).toEqual({
      status: 400,
      body: { errors: [ONLY_REFUSAL] },
    });
    expect((await wsRun(t, alice, { query: AD_HOC })).errors).toEqual([ONLY_REFUSAL]);
  });
});

describe('a bad manifest stops the start, naming GRAPHQL_PERSISTED_MANIFEST', () => {
  const base = { AUTH_JWT_SECRET: SECRET, GRAPHQL_PERSISTED_ONLY: 'true' };
  // graphql-codegen's client preset hashes with sha1 unless told sha256.
  const sha1 = (text: string) => createHash('sha1').update(text).digest('hex');

  it.each([
    ['missing with GRAPHQL_PERSISTED_ONLY=true', undefined, /needs the path/],
    ['a file that is not there', join(dir, 'nowhere.json'), /cannot read .* \(ENOENT\)/],
    ['not JSON', manifestFile('broken.json', '{ "a": '), /is not JSON/],
    ['a list', manifestFile('list.json', [START]), /is not a JSON object/],
    ['empty', manifestFile('empty.json', {}), /lists no documents/],
    [
      'hashed with sha1',
      manifestFile('sha1.json', { [sha1(START)]: START }),
      /is not the sha256 hex of its document .*hashAlgorithm: 'sha256'/,
    ],
    ['with a non-document', manifestFile('number.json', { [sha256('1')]: 1 }), /is not a document/],
  ])('%s', (_what, path, message) => {
    const err = refusalOf({ ...base, ...(path ? { GRAPHQL_PERSISTED_MANIFEST: path } : {}) });
    expect(err.variable).toBe('GRAPHQL_PERSISTED_MANIFEST');
    expect(err.message).toMatch(message);
  });

  it('with a document that does not fit the schema, before the database opens', async () => {
    const stale = 'query Old { task(id: "x") { id colour } }';
    const path = manifestFile('stale.json', { [sha256(stale)]: stale });
    const config = loadConfig({
      ...base,
      DATA_DIR: 'memory://',
      LOG_LEVEL: 'silent',
      GRAPHQL_PERSISTED_MANIFEST: path,
    });
    await expect(createApp({ config })).rejects.toThrow(
      /GRAPHQL_PERSISTED_MANIFEST: the document [0-9a-f]{12}… does not fit this server's schema: Cannot query field "colour"/,
    );
  });
});
