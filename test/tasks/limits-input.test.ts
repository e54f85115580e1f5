import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineTaskKind } from '../../src/tasks/kinds.js';
import { eventually, startTestApp, type TestApp } from '../helpers/app.js';
import { restClient } from '../helpers/rest.js';

/** Takes any input; asks for an answer of any shape and completes with it. */
const ask = defineTaskKind({
  name: 'ask',
  description: 'asks for anything',
  inputSchema: {},
  run: ({ requestInput }) => requestInput({ key: 'answer', message: 'anything' }),
});

let t: TestApp;
let call: ReturnType<typeof restClient>;
let alice: string;
beforeAll(async () => {
  t = await startTestApp({ kinds: [ask] });
  call = restClient(t.url);
  alice = await t.token('alice');
});
afterAll(() => t?.stop());

const nested = (levels: number) => `${'['.repeat(levels)}${']'.repeat(levels)}`;
/** JSON text whose string holds a lone high surrogate (JSON.stringify would escape it the same way). */
const LONE = '"\\ud800 alone"';

/** POSTs a GraphQL body as is (a test's JSON.stringify would overflow on what the server must refuse). */
async function rawGql(
  body: string,
): Promise<{ errors?: Array<{ extensions?: { code?: string } }> }> {
  const response = await fetch(`${t.url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${alice}` },
    body,
  });
  return (await response.json()) as { errors?: Array<{ extensions?: { code?: string } }> };
}

async function waitingTask(): Promise<string> {
  const { data } = await t.gql('mutation { startTask(input: { kind: "ask" }) { id } }', {}, alice);
  const id = data.startTask.id as string;
  await eventually(async () => {
    const res = await t.gql('query($id: ID!) { task(id: $id) { status } }', { id }, alice);
    return res.data?.task?.status === 'INPUT_REQUIRED' ? true : undefined;
  });
  return id;
}

describe('payload checks on every path', () => {
  it('refuses REST input nested 10 000 levels with 422, not a 500', async () => {
    const res = await call('POST', '/v1/jobs', {
      token: alice,
      body: `{"kind":"ask","input":${nested(10_000)}}`,
    });
    expect(res.status, res.text).toBe(422);
    expect(res.body).toMatchObject({ code: 'BAD_USER_INPUT' });
    expect(res.body.detail).toMatch(/nested deeper than 64/);
  });

  it('accepts input nested 64 levels and refuses 65', async () => {
    const ok = await call('POST', '/v1/jobs', {
      token: alice,
      body: `{"kind":"ask","input":${nested(64)}}`,
    });
    expect(ok.status, ok.text).toBe(202);
    const deep = await call('POST', '/v1/jobs', {
      token: alice,
      body: `{"kind":"ask","input":${nested(65)}}`,
    });
    expect(deep.status, deep.text).toBe(422);
  });

  it('refuses REST input holding a lone surrogate, in a value or a key', async () => {
    for (const input of [`{"text":${LONE}}`, `{${LONE}:1}`, LONE]) {
      const res = await call('POST', '/v1/jobs', {
        token: alice,
        body: `{"kind":"ask","input":${input}}`,
      });
      expect(res.status, `${input}: ${res.text}`).toBe(422);
      expect(res.body).toMatchObject({ code: 'BAD_USER_INPUT' });
      expect(res.body.detail).toMatch(/lone surrogate/);
    }
  });

  it('refuses U+0000 in a key as in a value', async () => {
    const res = await call('POST', '/v1/jobs', {
      token: alice,
      body: '{"kind":"ask","input":{"a\\u0000b":1}}',
    });
    expect(res.status, res.text).toBe(422);
    expect(res.body.detail).toMatch(/U\+0000/);
  });

  it('refuses deep and lone-surrogate input over GraphQL with BAD_USER_INPUT', async () => {
    const start =
      'mutation($input: JSON) { startTask(input: { kind: \\"ask\\", input: $input }) { id } }';
    for (const input of [nested(10_000), `{"t":${LONE}}`]) {
      const json = await rawGql(`{"query":"${start}","variables":{"input":${input}}}`);
      expect(json.errors?.[0]?.extensions?.code, JSON.stringify(json)).toBe('BAD_USER_INPUT');
    }
  });

  it('refuses deep and lone-surrogate answers, over REST and GraphQL', async () => {
    const id = await waitingTask();
    const rest = await call('POST', `/v1/jobs/${id}/input`, {
      token: alice,
      body: `{"key":"answer","value":${nested(10_000)}}`,
    });
    expect(rest.status, rest.text).toBe(422);
    const lone = await call('POST', `/v1/jobs/${id}/input`, {
      token: alice,
      body: `{"key":"answer","value":${LONE}}`,
    });
    expect(lone.status, lone.text).toBe(422);
    const answer = `mutation($v: JSON!) { provideTaskInput(id: \\"${id}\\", key: \\"answer\\", value: $v) { id } }`;
    const gql = await rawGql(`{"query":"${answer}","variables":{"v":${nested(5_000)}}}`);
    expect(gql.errors?.[0]?.extensions?.code, JSON.stringify(gql.errors)).toBe('BAD_USER_INPUT');
    // Nothing was stored: the task still waits, and a good answer completes it.
    const good = await call('POST', `/v1/jobs/${id}/input`, {
      token: alice,
      body: '{"key":"answer","value":{"fine":true}}',
    });
    expect(good.status, good.text).toBe(200);
  });

  it('refuses a lone surrogate in an input key or idempotency key', async () => {
    const id = await waitingTask();
    const key = await call('POST', `/v1/jobs/${id}/input`, {
      token: alice,
      body: `{"key":${LONE},"value":1}`,
    });
    expect(key.status, key.text).toBe(422);
    const gql = await t.gql(
      'mutation($k: String) { startTask(input: { kind: "ask", idempotencyKey: $k }) { id } }',
      { k: '\ud800' },
      alice,
    );
    expect(gql.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
  });
});
