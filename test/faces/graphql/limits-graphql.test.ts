import { getIntrospectionQuery } from 'graphql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type GraphQLResponse, SECRET, startTestApp, type TestApp } from '../../helpers/app.js';
import { alice, t, useFileApp } from '../../helpers/file-app.js';

/** GraphQL rows of DESIGN §12: refused before execution, cheaply, coded, on every path. */

useFileApp();

/**
 * The same document through the server's direct path (a plain POST) and through yoga's own
 * handling (an Accept header the direct path leaves to yoga).
 */
async function both(query: string, token: string | null = alice): Promise<GraphQLResponse[]> {
  const auth: Record<string, string> = token ? { authorization: `Bearer ${token}` } : {};
  const answers: GraphQLResponse[] = [];
  for (const accept of ['application/json', 'application/graphql-response+json;q=1, */*;q=0.5']) {
    const res = await fetch(`${t.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept, ...auth },
      body: JSON.stringify({ query }),
    });
    expect(res.status).toBeLessThan(500);
    answers.push((await res.json()) as GraphQLResponse);
  }
  return answers;
}

function expectRefused(answers: GraphQLResponse[], message: RegExp): void {
  for (const answer of answers) {
    expect(answer.data ?? undefined, JSON.stringify(answer)).toBeUndefined();
    expect(answer.errors?.[0]?.extensions?.code, JSON.stringify(answer)).toBe(
      'GRAPHQL_VALIDATION_FAILED',
    );
    expect(answer.errors?.[0]?.message).toMatch(message);
  }
}

const ofType = (n: number) => `${'ofType { '.repeat(n)}name${' }'.repeat(n)}`;

describe('document limits', () => {
  it('refuses a selection deeper than GRAPHQL_MAX_DEPTH, introspection included', async () => {
    expectRefused(
      await both(`{ __schema { types { fields { type { ${ofType(20)} } } } } }`),
      /depth limit of 20/,
    );
  });

  it('still answers the introspection query GraphiQL sends', async () => {
    for (const answer of await both(getIntrospectionQuery())) {
      expect(answer.errors).toBeUndefined();
      expect(answer.data.__schema.queryType.name).toBe('Query');
    }
  });

  it('refuses 1 000 aliases of task() without executing one', async () => {
    const id = '00000000-0000-4000-8000-000000000000';
    const aliases = (n: number) =>
      Array.from({ length: n }, (_, i) => `a${i}: task(id: "${id}") { id }`).join(' ');
    // 1 000 are past the token limit already; 500 fit in it, and meet the alias limit.
    expectRefused(await both(`{ ${aliases(1_000)} }`), /GRAPHQL_MAX_TOKENS/);
    expectRefused(await both(`{ ${aliases(500)} }`), /aliases/i);
    const ok = Array.from({ length: 30 }, (_, i) => `a${i}: task(id: "${id}") { id }`);
    for (const answer of await both(`{ ${ok.join(' ')} }`)) expect(answer.errors).toBeUndefined();
  });

  it('stops reading a document at GRAPHQL_MAX_TOKENS, before its end', async () => {
    // 100 000 tokens, then a syntax error the parser never reaches.
    const long = `{ ${'a '.repeat(100_000)} ) }`;
    expectRefused(await both(long), /GRAPHQL_MAX_TOKENS \(10000\)/);
  });

  it('refuses more directives than GRAPHQL_MAX_DIRECTIVES', async () => {
    const many = `{ __typename ${'@skip(if: false) '.repeat(51)} }`;
    expectRefused(await both(many), /directives/i);
  });

  it('refuses a document too deep to parse with GRAPHQL_VALIDATION_FAILED, not a 500', async () => {
    for (const deep of [
      `{ ${'a { '.repeat(3_000)} id ${'} '.repeat(3_000)} }`,
      `{ task(id: ${'['.repeat(4_000)}1${']'.repeat(4_000)}) { id } }`,
      `{ __schema { types { ${ofType(400)} } } }`,
    ]) {
      expectRefused(await both(deep), /nested/);
    }
  });
});

describe('errors', () => {
  it('gives variable-coercion errors a code', async () => {
    const res = await t.gql(
      'query($n: Int) { tasks(first: $n) { edges { cursor } } }',
      { n: 'many' },
      alice,
    );
    expect(res.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
    const missing = await t.gql('query($id: ID!) { task(id: $id) { id } }', {}, alice);
    expect(missing.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
  });

  it('answers a malformed 500 KiB body briefly, echoing none of it', async () => {
    const body = `{"query": "${'x'.repeat(500 * 1024)}`;
    const res = await fetch(`${t.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    });
    const text = await res.text();
    expect(res.status).toBe(400);
    expect(text.length).toBeLessThan(300);
    expect(text).not.toContain('xxxx');
    expect(JSON.parse(text).errors[0].extensions.code).toBe('BAD_REQUEST');
  });

  it('refuses 5 MiB of variables before executing anything', async () => {
    const res = await fetch(`${t.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${alice}` },
      body: JSON.stringify({
        query: 'mutation($i: JSON) { startTask(input: { kind: "sleep", input: $i }) { id } }',
        variables: { i: { ms: 0, pad: 'x'.repeat(5 * 1024 * 1024) } },
      }),
    });
    expect(res.status).toBe(413);
  });
});

describe('forgery', () => {
  const startMutation = 'mutation { startTask(input: { kind: "sleep", input: { ms: 0 } }) { id } }';
  async function count(token: string): Promise<number> {
    const res = await t.gql('{ tasks { edges { cursor } } }', {}, token);
    return res.data.tasks.edges.length;
  }

  it('refuses form, multipart and text/plain POSTs with 415, executing nothing', async () => {
    const mallory = await t.token('mallory');
    const form = new URLSearchParams({ query: startMutation }).toString();
    const multipart = `--x\r\nContent-Disposition: form-data; name="operations"\r\n\r\n${JSON.stringify({ query: startMutation })}\r\n--x--\r\n`;
    for (const [type, body] of [
      ['application/x-www-form-urlencoded', form],
      ['multipart/form-data; boundary=x', multipart],
      ['text/plain', JSON.stringify({ query: startMutation })],
    ] as const) {
      const res = await fetch(`${t.url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': type, authorization: `Bearer ${mallory}` },
        body,
      });
      expect(res.status, type).toBe(415);
      const json = (await res.json()) as GraphQLResponse;
      expect(json.errors?.[0]?.extensions?.code).toBe('UNSUPPORTED_MEDIA_TYPE');
    }
    expect(await count(mallory)).toBe(0);
  });

  it('answers queries over GET without any special header, and refuses mutations', async () => {
    const query = await fetch(`${t.url}/graphql?query=${encodeURIComponent('{ __typename }')}`);
    expect(query.status).toBe(200);
    expect(await query.json()).toEqual({ data: { __typename: 'Query' } });
    const mallory = await t.token('mallory-get');
    const mutation = await fetch(`${t.url}/graphql?query=${encodeURIComponent(startMutation)}`, {
      headers: { authorization: `Bearer ${mallory}`, accept: 'application/json' },
    });
    expect(mutation.status).toBe(405);
    const json = (await mutation.json()) as GraphQLResponse;
    expect(json.errors?.[0]?.extensions?.code).toBeTruthy();
    expect(await count(mallory)).toBe(0);
  });
});

describe('in production', () => {
  let p: TestApp;
  let open: TestApp;
  beforeAll(async () => {
    p = await startTestApp({ env: { NODE_ENV: 'production', AUTH_JWT_SECRET: SECRET } });
    open = await startTestApp({
      env: { NODE_ENV: 'production', AUTH_JWT_SECRET: SECRET, GRAPHQL_INTROSPECTION: 'true' },
    });
  });
  afterAll(async () => {
    await p?.stop();
    await open?.stop();
  });

  it('refuses introspection without a token, and still answers __typename', async () => {
    const schema = await p.gql('{ __schema { queryType { name } } }');
    expect(schema.data ?? undefined).toBeUndefined();
    expect(schema.errors?.[0]?.extensions?.code).toBe('GRAPHQL_VALIDATION_FAILED');
    const type = await p.gql('{ __type(name: "Task") { name } }');
    expect(type.errors?.[0]?.extensions?.code).toBe('GRAPHQL_VALIDATION_FAILED');
    expect(await p.gql('{ __typename }')).toEqual({ data: { __typename: 'Query' } });
  });

  it('answers introspection when GRAPHQL_INTROSPECTION=true', async () => {
    const schema = await open.gql('{ __schema { queryType { name } } }');
    expect(schema.data.__schema.queryType.name).toBe('Query');
  });

  it('never suggests field, argument or enum names', async () => {
    const token = await p.token('alice');
    for (const [query, variables] of [
      ['{ taks { id } }', {}],
      ['{ tasks(frist: 1) { edges { cursor } } }', {}],
      ['query($s: [TaskStatus!]) { tasks(status: $s) { edges { cursor } } }', { s: ['WORKIN'] }],
    ] as const) {
      const res = await p.gql(query, variables, token);
      expect(res.errors?.length, query).toBeGreaterThan(0);
      for (const error of res.errors ?? []) {
        expect(error.message).not.toMatch(/did you mean/i);
        expect(error.extensions?.code).toBeTruthy();
      }
    }
  });
});
