import { once } from 'node:events';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { mintToken } from '../src/auth/mint.js';
import { SECRET } from './helpers/app.js';
import { freshDatabase, type TestDatabase } from './helpers/db.js';
import { type NodeProcess, spawnNode } from './helpers/process.js';

/**
 * Property-based fuzzing of a running server process (NODE_ENV=production): random and
 * mutated GraphQL documents, JSON bodies, headers and graphql-ws messages. Whatever arrives:
 * no 5xx, every GraphQL error carries `extensions.code`, the process lives on, and the heap
 * (measured after a full collection, in the server's own process) comes back near where it
 * was. Runs are bounded; the seed is printed, and `FUZZ_SEED=<seed>` replays a run (fast-check
 * also prints the path of a failure, for `FUZZ_PATH`).
 */

const SEED = Number(process.env.FUZZ_SEED ?? Math.floor(Math.random() * 2 ** 31));
const RUNS = Number(process.env.FUZZ_RUNS ?? 40);
const PATH = process.env.FUZZ_PATH;
/** Heap a second round of fuzzing may add over the first (cache entries, stored tasks). */
const HEAP_SLACK = 24 * 1_048_576;

const UNKNOWN_ID = '5b8c1e2a-3f4d-4e6f-8a9b-0c1d2e3f4a5b';
const VALID_DOCUMENTS = [
  '{ __typename }',
  'query { taskKinds { name description } }',
  'query($id: ID!) { task(id: $id) { id status progress result error { code message } } }',
  'query { tasks(first: 3) { edges { cursor node { id status kind } } pageInfo { hasNextPage endCursor } } }',
  'query($s: [TaskStatus!]) { tasks(status: $s, first: 2) { edges { node { id } } } }',
  'mutation($input: StartTaskInput!) { startTask(input: $input) { id status version } }',
  `mutation { cancelTask(id: "${UNKNOWN_ID}") { id status } }`,
  'mutation($id: ID!, $v: JSON!) { provideTaskInput(id: $id, key: "k", value: $v) { id } }',
  'query { __schema { queryType { name } types { name fields { name } } } }',
  'fragment F on Task { id status } query { tasks { edges { node { ...F } } } }',
  'query Q @include(if: true) { a: taskKinds { name } b: taskKinds { name } }',
  `subscription { taskUpdated(id: "${UNKNOWN_ID}") { id status } }`,
];
const TOKENS = [
  '{',
  '}',
  '(',
  ')',
  '[',
  ']',
  ':',
  '$',
  '!',
  '@',
  '...',
  '"',
  '"""',
  '#',
  '\n',
  ',',
  '=',
  '|',
  '&',
  'query',
  'mutation',
  'subscription',
  'fragment',
  'on',
  'task',
  'tasks',
  'id',
  '__typename',
  '__schema',
  '__type(name: "Task")',
  'first:',
  'input',
  'null',
  'true',
  '-1.5e999',
  '"\\u0000"',
  '"\\uD800"',
  '@skip(if: $x)',
  'a: task(id: $id)',
];

/** A valid document with a few random edits: inserted text, deleted spans. */
const mutatedDocument = fc
  .tuple(
    fc.constantFrom(...VALID_DOCUMENTS),
    fc.array(
      fc.tuple(
        fc.nat(),
        fc.nat({ max: 12 }),
        fc.oneof(fc.string({ maxLength: 6 }), fc.constantFrom(...TOKENS)),
      ),
      { maxLength: 6 },
    ),
  )
  .map(([document, edits]) =>
    edits.reduce((text, [at, cut, insert]) => {
      const i = at % (text.length + 1);
      return text.slice(0, i) + insert + text.slice(i + cut);
    }, document),
  );

/** Hostile shapes the limits of DESIGN §12 refuse: deep, wide, long, many directives. */
const hostileDocument = fc.oneof(
  fc.nat({ max: 3_000 }).map((n) => `{${'a{'.repeat(n)}b${'}'.repeat(n)}}`),
  fc
    .nat({ max: 400 })
    .map((n) => `{ ${Array.from({ length: n }, (_, i) => `a${i}: __typename`).join(' ')} }`),
  fc.nat({ max: 2_000 }).map((n) => `{ __typename ${'@include(if: true) '.repeat(n)}}`),
  fc.nat({ max: 20_000 }).map((n) => `{ __typename ${'a '.repeat(n)}}`),
  fc
    .nat({ max: 40 })
    .map(
      (n) =>
        `query { tasks { edges { node { ${'...F '.repeat(n)} } } } } fragment F on Task { id }`,
    ),
  fc
    .nat({ max: 60 })
    .map(
      (n) => `{ __schema { ${'types { fields { type { '.repeat(n)}name${' } } }'.repeat(n)} } }`,
    ),
);

const document = fc.oneof(
  { weight: 4, arbitrary: mutatedDocument },
  {
    weight: 2,
    arbitrary: fc.array(fc.constantFrom(...TOKENS), { maxLength: 80 }).map((t) => t.join(' ')),
  },
  { weight: 1, arbitrary: fc.string({ maxLength: 200 }) },
  { weight: 2, arbitrary: hostileDocument },
);

/** Any JSON value, awkward strings and numbers included (deep nesting: see `deepJson`). */
const json = fc.oneof(
  fc.jsonValue({ maxDepth: 4 }),
  fc.constantFrom(
    '\u0000',
    '\uD800',
    'a\uDFFFb',
    '\u2028',
    '',
    -0,
    1e308,
    Number.MAX_SAFE_INTEGER + 2,
  ),
);

/**
 * JSON text nested up to 5 000 levels. Kept as text: as a value it would overflow the
 * recursion of anything that prints it, fast-check's report of a failure included.
 */
const deepJson = fc
  .record({ n: fc.integer({ min: 1, max: 5_000 }), object: fc.boolean() })
  .map(({ n, object }) =>
    object ? `${'{"a":'.repeat(n)}1${'}'.repeat(n)}` : `${'['.repeat(n)}${']'.repeat(n)}`,
  );

const taskInput = fc.record(
  {
    kind: fc.oneof(
      fc.constantFrom('sleep', 'export', 'approval', 'primes', 'nope', ''),
      fc.string(),
    ),
    input: fc.oneof(json, fc.record({ ms: fc.integer({ min: -5, max: 5 }), steps: fc.integer() })),
    ttlMs: fc.oneof(fc.integer(), fc.constant(null)),
    idempotencyKey: fc.oneof(fc.string({ maxLength: 300 }), fc.constant(null)),
  },
  { requiredKeys: [] },
);

const variables = fc.oneof(
  fc.record(
    {
      id: fc.oneof(fc.uuid(), fc.string(), json),
      input: fc.oneof(taskInput, json),
      v: json,
      s: fc.oneof(fc.array(fc.constantFrom('WORKING', 'COMPLETED', 'nope')), json),
      x: json,
    },
    { requiredKeys: [] },
  ),
  json,
);

/** Printable ASCII: what fetch lets through as a header value. */
const headerText = fc.stringMatching(/^[\x20-\x7e]{0,80}$/);
const contentType = fc.oneof(
  fc.constantFrom(
    'application/json',
    'application/json; charset=utf-8',
    'application/graphql-response+json',
    'application/x-www-form-urlencoded',
    'multipart/form-data; boundary=x',
    'text/plain',
    'application/graphql',
    'application/json; charset=latin1',
  ),
  headerText,
);

let database: TestDatabase;
let server: NodeProcess;
let url: string;
let probe: string;
let token: string;

/** The bearer a run sends: none, valid, or garbage. */
const bearer = () =>
  fc.oneof(
    fc.constant(undefined),
    fc.constant(`Bearer ${token}`),
    headerText.map((t) => `Bearer ${t}`),
    headerText,
  );

async function heapUsed(): Promise<number> {
  const response = await fetch(probe);
  return ((await response.json()) as { heapUsed: number }).heapUsed;
}

function expectAlive() {
  expect(server.child.exitCode).toBeNull();
  expect(server.child.signalCode).toBeNull();
}

/** No 5xx; a GraphQL answer's errors all carry a code; a problem document carries one. */
async function check(response: Response, path: string): Promise<void> {
  const text = await response.text();
  expect(response.status, text.slice(0, 300)).toBeLessThan(500);
  let body: any;
  try {
    body = JSON.parse(text);
  } catch {
    return;
  }
  if (path === '/graphql' && body && Array.isArray(body.errors))
    for (const error of body.errors)
      expect(error.extensions?.code, JSON.stringify(error)).toEqual(expect.any(String));
  if (response.headers.get('content-type')?.startsWith('application/problem+json'))
    expect(body.code, text.slice(0, 300)).toEqual(expect.any(String));
}

const params = (seed: number) => ({
  seed,
  numRuns: RUNS,
  ...(PATH ? { path: PATH } : {}),
});

const graphqlOverHttp = () =>
  fc.asyncProperty(
    fc.record({
      method: fc.constantFrom('POST', 'POST', 'POST', 'GET'),
      document,
      variables,
      operationName: fc.oneof(fc.constant(undefined), fc.string({ maxLength: 10 }), json),
      shape: fc.constantFrom('normal', 'normal', 'json', 'text', 'batch', 'deep'),
      deep: deepJson,
      junk: json,
      contentType,
      accept: fc.oneof(fc.constant(undefined), headerText, fc.constant('text/event-stream')),
      authorization: bearer(),
    }),
    async (run) => {
      const headers: Record<string, string> = {};
      if (run.authorization !== undefined) headers.authorization = run.authorization;
      if (run.accept !== undefined) headers.accept = run.accept;
      let target = `${url}/graphql`;
      let body: string | undefined;
      const request = {
        query: run.document,
        variables: run.variables,
        operationName: run.operationName,
      };
      if (run.method === 'GET') {
        const search = new URLSearchParams({ query: run.document });
        search.set('variables', JSON.stringify(run.variables) ?? '');
        target += `?${search}`;
      } else {
        headers['content-type'] = run.contentType;
        body =
          run.shape === 'json'
            ? JSON.stringify(run.junk)
            : run.shape === 'text'
              ? run.document
              : run.shape === 'batch'
                ? JSON.stringify([request, request])
                : run.shape === 'deep'
                  ? `{"query":${JSON.stringify(run.document)},"variables":{"id":${run.deep},"input":{"kind":"sleep","input":${run.deep}},"v":${run.deep}}}`
                  : JSON.stringify(request);
      }
      const response = await fetch(target, {
        method: run.method,
        headers,
        ...(body === undefined ? {} : { body }),
      });
      await check(response, '/graphql');
    },
  );

const restOverHttp = () =>
  fc.asyncProperty(
    fc.record({
      method: fc.constantFrom('GET', 'POST', 'DELETE', 'PUT', 'PATCH', 'OPTIONS', 'HEAD'),
      path: fc.oneof(
        fc.constantFrom(
          '/v1/jobs',
          `/v1/jobs/${UNKNOWN_ID}`,
          `/v1/jobs/${UNKNOWN_ID}/input`,
          '/readyz',
          '/healthz',
        ),
        fc.stringMatching(/^\/v1\/jobs(\/[\w%.~-]{0,40}){0,3}(\?[\w=&%,.-]{0,60})?$/),
        fc.stringMatching(/^\/[\w%./?=&-]{0,60}$/),
      ),
      body: fc.oneof(
        fc.constant(undefined),
        taskInput.map((b) => JSON.stringify(b)),
        fc
          .record({ key: fc.oneof(fc.string(), json), value: json }, { requiredKeys: [] })
          .map((b) => JSON.stringify(b)),
        json.map((b) => JSON.stringify(b) ?? ''),
        deepJson.map((d) => `{"kind":"sleep","input":${d}}`),
        deepJson.map((d) => `{"key":"k","value":${d}}`),
        fc.string({ maxLength: 100 }),
      ),
      contentType,
      origin: fc.oneof(fc.constant(undefined), fc.constant('https://evil.example'), headerText),
      idempotencyKey: fc.oneof(fc.constant(undefined), headerText),
      authorization: bearer(),
    }),
    async (run) => {
      const headers: Record<string, string> = {};
      if (run.authorization !== undefined) headers.authorization = run.authorization;
      if (run.origin !== undefined) headers.origin = run.origin;
      if (run.idempotencyKey !== undefined) headers['idempotency-key'] = run.idempotencyKey;
      const body = run.method === 'GET' || run.method === 'HEAD' ? undefined : run.body;
      if (body !== undefined) headers['content-type'] = run.contentType;
      const response = await fetch(`${url}${run.path}`, {
        method: run.method,
        headers,
        ...(body === undefined ? {} : { body }),
      });
      await check(response, run.path);
    },
  );

const wsMessage = fc.oneof(
  {
    weight: 4,
    arbitrary: fc
      .record({
        id: fc.oneof(fc.constantFrom('1', '2', '1'), fc.string({ maxLength: 5 })),
        query: document,
        variables,
      })
      .map(({ id, query, variables }) =>
        JSON.stringify({ id, type: 'subscribe', payload: { query, variables } }),
      ),
  },
  {
    weight: 1,
    arbitrary: fc
      .record(
        {
          type: fc.constantFrom(
            'complete',
            'ping',
            'pong',
            'connection_init',
            'next',
            'error',
            'nope',
          ),
          id: json,
          payload: json,
        },
        { requiredKeys: [] },
      )
      .map((m) => JSON.stringify(m)),
  },
  { weight: 1, arbitrary: json.map((m) => JSON.stringify(m) ?? '') },
  {
    weight: 1,
    arbitrary: deepJson.map(
      (d) =>
        `{"id":"9","type":"subscribe","payload":{"query":"{ __typename }","variables":{"v":${d}}}}`,
    ),
  },
  { weight: 1, arbitrary: fc.string({ maxLength: 100 }) },
);

/** Close codes a hostile message may earn: the protocol's 44xx, a too-large frame, or normal. */
const ACCEPTABLE_CLOSE = (code: number) =>
  code === 1000 || code === 1009 || (code >= 4400 && code < 4500);

const graphqlOverWebSocket = () =>
  fc.asyncProperty(
    fc.record({
      init: fc.oneof(fc.constant({ authorization: `Bearer ${token}` }), fc.constant({}), json),
      sendInit: fc.boolean(),
      messages: fc.array(wsMessage, { maxLength: 6 }),
    }),
    async (run) => {
      const socket = new WebSocket(`${url.replace(/^http/, 'ws')}/graphql`, 'graphql-transport-ws');
      const received: any[] = [];
      let closeCode: number | undefined;
      const closed = once(socket, 'close').then(([code]) => {
        closeCode = code as number;
      });
      socket.on('error', () => {});
      socket.on('message', (data) => {
        try {
          received.push(JSON.parse(String(data)));
        } catch {
          received.push({ unparsable: String(data) });
        }
        socket.emit('fuzz-message');
      });
      await Promise.race([once(socket, 'open'), closed]);
      if (socket.readyState === WebSocket.OPEN) {
        if (run.sendInit) {
          socket.send(JSON.stringify({ type: 'connection_init', payload: run.init }));
          await Promise.race([
            (async () => {
              while (!received.some((m) => m.type === 'connection_ack'))
                await once(socket, 'fuzz-message');
            })(),
            closed,
          ]);
        }
        for (const message of run.messages)
          if (socket.readyState === WebSocket.OPEN) socket.send(message);
        // A ping answered means every message before it was handled.
        if (socket.readyState === WebSocket.OPEN) {
          socket.send(JSON.stringify({ type: 'ping' }));
          await Promise.race([
            (async () => {
              while (!received.some((m) => m.type === 'pong')) await once(socket, 'fuzz-message');
            })(),
            closed,
          ]);
        }
        socket.close(1000);
      }
      await closed;
      if (closeCode !== undefined && closeCode !== 1000 && closeCode !== 1005)
        expect(ACCEPTABLE_CLOSE(closeCode), `closed ${closeCode}`).toBe(true);
      for (const message of received) {
        const errors =
          message.type === 'error'
            ? message.payload
            : message.type === 'next'
              ? message.payload?.errors
              : undefined;
        if (Array.isArray(errors))
          for (const error of errors)
            expect(error.extensions?.code, JSON.stringify(error)).toEqual(expect.any(String));
      }
    },
  );

describe('fuzzing a running server', { timeout: 120_000 }, () => {
  beforeAll(async () => {
    console.log(`fuzz: FUZZ_SEED=${SEED} (rounds use ${SEED} and ${SEED + 1}) FUZZ_RUNS=${RUNS}`);
    database = await freshDatabase();
    token = await mintToken(SECRET, {
      sub: 'fuzzer',
      scopes: ['tasks:read', 'tasks:write'],
      ttl: '1h',
    });
    server = spawnNode('test/helpers/fuzz-server.ts', {
      ...process.env,
      NODE_ENV: 'production',
      AUTH_JWT_SECRET: SECRET,
      PORT: '0',
      HOST: '127.0.0.1',
      DATA_DIR: 'memory://',
      LOG_LEVEL: 'warn',
      ...(database.url ? { DATABASE_URL: database.url } : { DATABASE_URL: '' }),
    });
    for (;;) {
      const ready = server.logs().find((l) => l.msg === 'fuzz server listening');
      if (ready) {
        url = ready.url;
        probe = ready.probe;
        break;
      }
      if (server.child.exitCode !== null) throw new Error(`fuzz server exited: ${server.stderr()}`);
      await once(server.child.stdout!, 'data');
    }
  });
  afterAll(async () => {
    server?.child.kill('SIGKILL');
    await server?.exited;
    await database?.drop();
  });

  it('answers every request without a 5xx, codes every error, stays up and gives memory back', async () => {
    const start = await heapUsed();
    const round = async (seed: number) => {
      await fc.assert(graphqlOverHttp(), params(seed));
      await fc.assert(restOverHttp(), params(seed));
      await fc.assert(graphqlOverWebSocket(), params(seed));
      expectAlive();
      return heapUsed();
    };
    // Two rounds of different requests (seeds SEED and SEED + 1): what round one leaves is
    // what may legitimately be kept (bounded caches, stored tasks); round two must not add
    // about as much again. A leak of a few MiB per hostile document shows at once.
    const first = await round(SEED);
    const second = await round(SEED + 1);
    console.log(
      `fuzz heap: start ${mib(start)} MiB, after round 1 ${mib(first)} MiB, after round 2 ${mib(second)} MiB`,
    );
    expect(second - first).toBeLessThan(HEAP_SLACK);
    expect(second - start).toBeLessThan(3 * HEAP_SLACK);
    expectAlive();
    expect(server.stderr()).not.toMatch(/Unhandled|FATAL|heap out of memory/);
  });

  it('keeps no memory for the hostile documents of §12, sent again and again', async () => {
    // Each document is distinct, so no cache can answer it from a previous copy: ~200 KB of
    // 100 000 tokens, 20 000 directives, a selection nested 10 000 deep, 1 000 aliases, and
    // 5 MiB of variables. Unauthenticated, as an attacker would send them.
    const documents = (n: number): Array<{ query: string; variables?: unknown }> => [
      { query: `{ ${Array.from({ length: 33_000 }, (_, i) => `a${n}_${i}`).join(' ')} }` },
      { query: `{ __typename ${'@skip(if: false) '.repeat(20_000)} }` },
      { query: `${'{ task(id: "x") '.repeat(10_000)}${'}'.repeat(10_000)}` },
      {
        query: `{ ${Array.from({ length: 1_000 }, (_, i) => `t${n}_${i}: taskKinds { name }`).join(' ')} }`,
      },
      {
        query: `query Q${n}($v: JSON) { __typename }`,
        variables: { v: 'x'.repeat(5 * 1_048_576) },
      },
    ];
    const round = async (from: number) => {
      for (let n = from; n < from + 20; n++) {
        for (const body of documents(n)) {
          const response = await fetch(`${url}/graphql`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify(body),
          });
          await check(response, '/graphql');
        }
      }
      expectAlive();
      return heapUsed();
    };
    const start = await heapUsed();
    const first = await round(0);
    const second = await round(1_000);
    const third = await round(2_000);
    console.log(
      `hostile heap: start ${mib(start)} MiB, rounds ${mib(first)}, ${mib(second)}, ${mib(third)} MiB`,
    );
    expect(third - first).toBeLessThan(HEAP_SLACK);
    expectAlive();
    expect(server.stderr()).not.toMatch(/Unhandled|FATAL|heap out of memory/);
  });
});

const mib = (bytes: number) => (bytes / 1_048_576).toFixed(1);
