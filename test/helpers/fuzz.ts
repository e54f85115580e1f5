import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, expect } from 'vitest';
import { mintToken } from '../../src/auth/mint.js';
import { SECRET } from './app.js';
import { freshDatabase, seedDataDir } from './db.js';
import { type NodeProcess, spawnScript } from './process.js';
import { UNKNOWN_ID } from './rest-jobs.js';

export { UNKNOWN_ID };

/**
 * What the fuzz rounds (test/fuzz*.test.ts) share: the seed and run count, the input
 * arbitraries, and a server process (test/helpers/fuzz-server.ts) started by
 * `useFuzzServer()` with the checks made against it. `url`, `probe`, `token` and `server`
 * are live bindings, set once the server is up.
 */

export const SEED = Number(process.env.FUZZ_SEED ?? Math.floor(Math.random() * 2 ** 31));
export const RUNS = Number(process.env.FUZZ_RUNS ?? 40);
export const PATH = process.env.FUZZ_PATH;
/** Heap a second round of fuzzing may add over the first (cache entries, stored tasks). */
export const HEAP_SLACK = 24 * 1_048_576;

export const VALID_DOCUMENTS = [
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
export const TOKENS = [
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
export const mutatedDocument = fc
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
export const hostileDocument = fc.oneof(
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

export const document = fc.oneof(
  { weight: 4, arbitrary: mutatedDocument },
  {
    weight: 2,
    arbitrary: fc.array(fc.constantFrom(...TOKENS), { maxLength: 80 }).map((t) => t.join(' ')),
  },
  { weight: 1, arbitrary: fc.string({ maxLength: 200 }) },
  { weight: 2, arbitrary: hostileDocument },
);

/** Any JSON value, awkward strings and numbers included (deep nesting: see `deepJson`). */
export const json = fc.oneof(
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
export const deepJson = fc
  .record({ n: fc.integer({ min: 1, max: 5_000 }), object: fc.boolean() })
  .map(({ n, object }) =>
    object ? `${'{"a":'.repeat(n)}1${'}'.repeat(n)}` : `${'['.repeat(n)}${']'.repeat(n)}`,
  );

export const taskInput = fc.record(
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

export const variables = fc.oneof(
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
export const headerText = fc.stringMatching(/^[\x20-\x7e]{0,80}$/);
export const contentType = fc.oneof(
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

export let server: NodeProcess;
export let url: string;
export let probe: string;
export let token: string;

/** The bearer a run sends: none, valid, or garbage. */
export const bearer = () =>
  fc.oneof(
    fc.constant(undefined),
    fc.constant(`Bearer ${token}`),
    headerText.map((t) => `Bearer ${t}`),
    headerText,
  );

export async function heapUsed(): Promise<number> {
  const response = await fetch(probe);
  return ((await response.json()) as { heapUsed: number }).heapUsed;
}

export function expectAlive() {
  expect(server.child.exitCode).toBeNull();
  expect(server.child.signalCode).toBeNull();
}

/** No 5xx; a GraphQL answer's errors all carry a code; a problem document carries one. */
export async function check(response: Response, path: string): Promise<void> {
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

export const params = (seed: number) => ({
  seed,
  numRuns: RUNS,
  ...(PATH ? { path: PATH } : {}),
});

/** test/helpers/fuzz-server.ts running, with what its listening line said. */
export interface FuzzServer {
  server: NodeProcess;
  url: string;
  /** The second port's address, which answers the heap in use after a full collection. */
  probe: string;
  stop(): Promise<void>;
}

/**
 * Starts test/helpers/fuzz-server.ts on this run's backend (a fresh Postgres database, or a
 * PGlite DATA_DIR holding the migrated database), `env` over its defaults, and resolves once
 * it listens.
 */
export async function startFuzzServer(env: Record<string, string>): Promise<FuzzServer> {
  const db = await freshDatabase();
  const dataDir = mkdtempSync(join(tmpdir(), 'taskhandle-fuzz-'));
  await seedDataDir(dataDir);
  const stop = async (node?: NodeProcess) => {
    node?.child.kill('SIGKILL');
    await node?.exited;
    await db.drop();
    rmSync(dataDir, { recursive: true, force: true });
  };
  const { node, line } = await spawnScript('test/helpers/fuzz-server.ts', 'fuzz server listening', {
    DATA_DIR: dataDir,
    LOG_LEVEL: 'warn',
    DATABASE_URL: db.url ?? '',
    ...env,
  }).catch(async (err: unknown) => {
    await stop();
    throw err;
  });
  return { server: node, url: line.url, probe: line.probe, stop: () => stop(node) };
}

let running: FuzzServer | undefined;

/** Starts the fuzz server before the enclosing describe block and stops it after. */
export function useFuzzServer(): void {
  beforeAll(async () => {
    console.log(`fuzz: FUZZ_SEED=${SEED} (rounds use ${SEED} and ${SEED + 1}) FUZZ_RUNS=${RUNS}`);
    token = await mintToken(SECRET, {
      sub: 'fuzzer',
      scopes: ['tasks:read', 'tasks:write'],
      ttl: '1h',
    });
    running = await startFuzzServer({ NODE_ENV: 'production' });
    ({ server, url, probe } = running);
  });
  afterAll(() => running?.stop());
}

export const mib = (bytes: number) => (bytes / 1_048_576).toFixed(1);
