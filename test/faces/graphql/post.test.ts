import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resultTypeFor } from '../../../src/faces/graphql/fast-post.js';
import { schema } from '../../../src/faces/graphql/index.js';
import { createYogaServer } from '../../../src/faces/graphql/yoga.js';
import { eventually, startTestApp, type TestApp } from '../../helpers/app.js';

/**
 * `POST /graphql` with a JSON body takes a direct path (src/faces/graphql/fast-post.ts) past yoga's
 * fetch adapter. It must answer exactly as yoga itself would: each request below goes to the
 * server, and to a yoga instance built the same way through `yoga.fetch`, and both answers
 * are compared (status, content type, CORS origin, body).
 */

let t: TestApp;
let alice: string;
let yoga: ReturnType<typeof createYogaServer>;
let taskId: string;
let doneId: string;

beforeAll(async () => {
  t = await startTestApp();
  alice = await t.token('alice');
  yoga = createYogaServer({
    schema,
    tasks: t.app.tasks,
    schedules: t.app.schedules,
    verifier: t.app.verifier,
    log: pino({ level: 'silent' }),
    production: false,
    limits: t.app.config.limits,
  });
  const started = await t.gql(
    'mutation { startTask(input: { kind: "sleep", input: { ms: 3600000, steps: 1 } }) { id } }',
    {},
    alice,
  );
  taskId = started.data.startTask.id;
  const done = await t.gql(
    'mutation { startTask(input: { kind: "sleep", input: { ms: 0 } }) { id } }',
    {},
    alice,
  );
  doneId = done.data.startTask.id;
  await eventually(async () =>
    (await t.gql('query($id: ID!) { task(id: $id) { status } }', { id: doneId }, alice)).data.task
      .status === 'COMPLETED'
      ? true
      : undefined,
  );
});
afterAll(() => t?.stop());

interface Answer {
  status: number;
  type: string | null;
  cors: string | null;
  body: unknown;
}

async function both(
  body: string | null,
  headers: Record<string, string>,
  search = '',
): Promise<[direct: Answer, reference: Answer]> {
  const init =
    body === null
      ? { method: 'GET', headers }
      : { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body };
  const read = async (response: Response): Promise<Answer> => {
    const text = await response.text();
    let parsed: unknown = text;
    try {
      parsed = JSON.parse(text);
    } catch {
      // not JSON: compared as text
    }
    return {
      status: response.status,
      type: response.headers.get('content-type'),
      cors: response.headers.get('access-control-allow-origin'),
      body: parsed,
    };
  };
  return [
    await read(await fetch(`${t.url}/graphql${search}`, init)),
    await read(await yoga.fetch(`http://localhost/graphql${search}`, init)),
  ];
}

/** What mainstream clients send as Accept on a POST. */
const CLIENT_ACCEPTS: Array<[client: string, accept: string]> = [
  ['Apollo Client 4', 'application/graphql-response+json,application/json;q=0.9'],
  ['graphql-http', 'application/graphql-response+json, application/json'],
  ['GraphiQL', 'application/graphql-response+json, application/json, multipart/mixed'],
  ['a client preferring JSON', 'application/json, application/graphql-response+json;q=0.5'],
];

const POLL = 'query($id: ID!) { task(id: $id) { id status version pollIntervalMs input } }';

describe('POST /graphql answers as yoga does', () => {
  const cases: Array<
    [string, () => { body: unknown; headers?: Record<string, string>; auth?: boolean }]
  > = [
    ['a query', () => ({ body: { query: POLL, variables: { id: taskId } } })],
    [
      'a query for an unknown task',
      () => ({ body: { query: POLL, variables: { id: '00000000-0000-4000-8000-000000000000' } } }),
    ],
    [
      'a query with a named operation',
      () => ({
        body: {
          query: `query A { taskKinds { name } } query B($id: ID!) { task(id: $id) { id } }`,
          operationName: 'B',
          variables: { id: taskId },
        },
      }),
    ],
    ['no token', () => ({ body: { query: POLL, variables: { id: taskId } }, auth: false })],
    [
      'a forged token',
      () => ({
        body: { query: POLL, variables: { id: taskId } },
        headers: { authorization: `Bearer ${alice.slice(0, -4)}AAAA` },
        auth: false,
      }),
    ],
    [
      'a mutation refused with BAD_USER_INPUT',
      () => ({ body: { query: 'mutation { startTask(input: { kind: "no-such-kind" }) { id } }' } }),
    ],
    ['a malformed id', () => ({ body: { query: POLL, variables: { id: 'not-a-uuid' } } })],
    [
      'a variable of the wrong type',
      () => ({
        body: {
          query: 'query($n: Int) { tasks(first: $n) { edges { cursor } } }',
          variables: { n: 'many' },
        },
      }),
    ],
    ['a syntax error', () => ({ body: { query: 'query { task(id: ' } })],
    ['an unknown field', () => ({ body: { query: '{ nope }' } })],
    [
      'a missing operation name',
      () => ({ body: { query: 'query A { taskKinds { name } } query B { taskKinds { name } }' } }),
    ],
    ['a batch', () => ({ body: [{ query: '{ taskKinds { name } }' }] })],
    ['an unknown parameter', () => ({ body: { query: '{ taskKinds { name } }', extra: 1 } })],
    [
      'Accept: application/graphql-response+json, with an error',
      () => ({
        body: { query: POLL, variables: { id: 'not-a-uuid' } },
        headers: { accept: 'application/graphql-response+json' },
      }),
    ],
    [
      'Accept: application/graphql-response+json, a syntax error',
      () => ({ body: { query: '{' }, headers: { accept: 'application/graphql-response+json' } }),
    ],
    [
      'a browser request from another origin (CORS)',
      () => ({
        body: { query: POLL, variables: { id: taskId } },
        headers: { origin: 'https://app.example' },
      }),
    ],
    ...['application/json; charset=UTF-8', 'application/merge-patch+json', 'text/plain'].map(
      (type): [string, () => { body: unknown; headers: Record<string, string> }] => [
        `Content-Type: ${type}`,
        () => ({
          body: { query: POLL, variables: { id: taskId } },
          headers: { 'content-type': type },
        }),
      ],
    ),
    [
      'Content-Type: application/json; charset=latin1 (refused by the one rule)',
      () => ({
        body: { query: '{ taskKinds { name } }' },
        headers: { 'content-type': 'application/json; charset=latin1' },
      }),
    ],
    [
      'Accept: text/html',
      () => ({ body: { query: '{ taskKinds { name } }' }, headers: { accept: 'text/html' } }),
    ],
    ...CLIENT_ACCEPTS.map(
      ([client, accept]): [string, () => { body: unknown; headers: Record<string, string> }] => [
        `${client}'s Accept (${accept}), a query`,
        () => ({ body: { query: POLL, variables: { id: taskId } }, headers: { accept } }),
      ],
    ),
    [
      `Apollo Client's Accept, an error`,
      () => ({
        body: { query: POLL, variables: { id: 'not-a-uuid' } },
        headers: { accept: CLIENT_ACCEPTS[0]![1] },
      }),
    ],
    [
      'a subscription over POST (a stream, ended by the final state)',
      () => ({ body: { query: `subscription { taskUpdated(id: "${doneId}") { id status } }` } }),
    ],
  ];

  for (const [name, make] of cases) {
    it(name, async () => {
      const { body, headers = {}, auth = true } = make();
      const [direct, reference] = await both(JSON.stringify(body), {
        ...(auth ? { authorization: `Bearer ${alice}` } : {}),
        ...headers,
      });
      expect(direct).toEqual(reference);
    });
  }

  it('body that is not JSON', async () => {
    const [direct, reference] = await both('{"query": ', { authorization: `Bearer ${alice}` });
    expect(direct).toEqual(reference);
    expect(direct.status).toBeGreaterThanOrEqual(400);
  });
});

describe('GET /graphql answers as yoga does', () => {
  const urql =
    'application/graphql-response+json, application/graphql+json, application/json, text/event-stream, multipart/mixed';
  const cases: Array<[string, () => Record<string, string>, Record<string, string>?]> = [
    ['a query', () => ({ query: POLL, variables: JSON.stringify({ id: taskId }) })],
    [
      'a query, urql’s Accept',
      () => ({ query: POLL, variables: JSON.stringify({ id: taskId }) }),
      { accept: urql },
    ],
    ['a mutation (405)', () => ({ query: 'mutation { cancelTask(id: "x") { id } }' })],
    ['variables that are not JSON', () => ({ query: POLL, variables: '{"id":' })],
    ['an unknown parameter', () => ({ query: '{ taskKinds { name } }', extra: '1' })],
    ['a syntax error', () => ({ query: '{' })],
    ['a malformed id', () => ({ query: POLL, variables: JSON.stringify({ id: 'x' }) })],
    [
      'a named operation',
      () => ({
        query: `query A { taskKinds { name } } query B($id: ID!) { task(id: $id) { id } }`,
        operationName: 'B',
        variables: JSON.stringify({ id: taskId }),
      }),
    ],
    [
      'Accept: multipart/mixed (yoga answers)',
      () => ({ query: '{ taskKinds { name } }' }),
      { accept: 'multipart/mixed' },
    ],
  ];
  for (const [name, make, headers = {}] of cases) {
    it(name, async () => {
      const search = `?${new URLSearchParams(make())}`;
      const [direct, reference] = await both(
        null,
        { authorization: `Bearer ${alice}`, ...headers },
        search,
      );
      expect(direct).toEqual(reference);
    });
  }

  it('a repeated parameter', async () => {
    const search = `?query=${encodeURIComponent('{ taskKinds { name } }')}&query=x`;
    const [direct, reference] = await both(null, { authorization: `Bearer ${alice}` }, search);
    expect(direct).toEqual(reference);
  });
});

describe('the direct path serves what mainstream clients send', () => {
  it('picks the response type yoga would, for every client shape', () => {
    expect(CLIENT_ACCEPTS.map(([, accept]) => resultTypeFor(accept))).toEqual([
      'application/graphql-response+json',
      'application/graphql-response+json',
      'application/graphql-response+json',
      'application/json',
    ]);
    expect(resultTypeFor(undefined)).toBe('application/json');
    expect(resultTypeFor('*/*')).toBe('application/json');
  });

  it('leaves to yoga what it would not answer with one JSON document', () => {
    expect(resultTypeFor('text/html')).toBeUndefined();
    expect(resultTypeFor('multipart/mixed')).toBeUndefined();
    expect(resultTypeFor('text/event-stream')).toBeUndefined();
    expect(resultTypeFor('application/json; charset=latin1')).toBeUndefined();
  });
});
