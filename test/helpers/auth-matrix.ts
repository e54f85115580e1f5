import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mintToken } from '../../src/auth/mint.js';
import { eventually, type GraphQLResponse, SECRET, startTestApp, type TestApp } from './app.js';

/**
 * Every operation of both faces against every kind of caller, on a server that also checks
 * issuer and audience. "hidden" means: answers exactly as it does for a random id.
 */

export const ISSUER = 'https://issuer.test/';
export const AUDIENCE = 'taskhandle-tests';
export const QUESTION = 'Ship the quarterly report?';
export const INPUT = { question: QUESTION };
export const ANSWER = { approved: true, comment: 'fine' };
export const READ = 'tasks:read';
export const WRITE = 'tasks:write';
export const ADMIN = 'tasks:admin';

export type Caller =
  | 'owner'
  | 'other principal'
  | 'admin'
  | 'read-only'
  | 'write-only'
  | 'no scopes'
  | 'no token'
  | 'expired token'
  | 'foreign signature'
  | 'alg none'
  | 'wrong issuer'
  | 'wrong audience';

/** owner/admin: the view that caller gets; ok: allowed (on the caller's own task); F/U: FORBIDDEN/UNAUTHENTICATED. */
export type Outcome = 'owner' | 'admin' | 'ok' | 'hidden' | 'F' | 'U';

export const OPS = [
  'task',
  'tasks',
  'taskKinds',
  'startTask',
  'cancelTask',
  'provideTaskInput',
  'taskUpdated over WebSocket',
  'taskUpdated over SSE',
  'GET /v1/jobs/{id}',
  'GET /v1/jobs',
  'POST /v1/jobs',
  'DELETE /v1/jobs/{id}',
  'POST /v1/jobs/{id}/input',
] as const;
export type Op = (typeof OPS)[number];

/** Operations held to another's column of the matrix: Relay's node and nodes are task(id). */
export const SAME_AS = { 'node(id)': 'task', 'nodes(ids)': 'task' } as const satisfies Record<
  string,
  Op
>;
export type CheckedOp = Op | keyof typeof SAME_AS;

export const U: Outcome[] = OPS.map(() => 'U');
// prettier-ignore
export const MATRIX: Record<Caller, Outcome[]> = {
  //                    task      tasks     kinds start cancel    provide   ws        sse       GET id    GET list  POST  DELETE    input
  owner: [
    'owner',
    'owner',
    'ok',
    'ok',
    'owner',
    'owner',
    'owner',
    'owner',
    'owner',
    'owner',
    'ok',
    'owner',
    'owner',
  ],
  'other principal': [
    'hidden',
    'hidden',
    'ok',
    'ok',
    'hidden',
    'hidden',
    'hidden',
    'hidden',
    'hidden',
    'hidden',
    'ok',
    'hidden',
    'hidden',
  ],
  // Admins see and cancel anyone's task, never its payloads, and cannot answer for its owner.
  // REST lists the caller's own tasks only (no owner parameter there).
  admin: [
    'admin',
    'admin',
    'ok',
    'ok',
    'admin',
    'hidden',
    'admin',
    'admin',
    'admin',
    'hidden',
    'ok',
    'admin',
    'hidden',
  ],
  'read-only': [
    'owner',
    'owner',
    'ok',
    'F',
    'F',
    'F',
    'owner',
    'owner',
    'owner',
    'owner',
    'F',
    'F',
    'F',
  ],
  'write-only': [
    'F',
    'F',
    'ok',
    'ok',
    'owner',
    'owner',
    'F',
    'F',
    'F',
    'F',
    'ok',
    'owner',
    'owner',
  ],
  // A valid token whose scope claim is empty: it may list the kinds, nothing else.
  'no scopes': ['F', 'F', 'ok', 'F', 'F', 'F', 'F', 'F', 'F', 'F', 'F', 'F', 'F'],
  'no token': U,
  'expired token': U,
  'foreign signature': U,
  'alg none': U,
  'wrong issuer': U,
  'wrong audience': U,
};

export const VIEW =
  'id kind status statusMessage version input result error { code } inputRequest { key message } owner';
export const Q = {
  task: `query($id: ID!) { task(id: $id) { ${VIEW} } }`,
  node: `query($id: ID!) { node(id: $id) { __typename id ... on Task { ${VIEW} } } }`,
  nodes: `query($ids: [ID!]!) { nodes(ids: $ids) { id ... on Task { ${VIEW} } } }`,
  ownTasks: `{ tasks(first: 100) { edges { node { ${VIEW} } } } }`,
  aliceTasks: `{ tasks(owner: "alice", first: 100) { edges { node { ${VIEW} } } } }`,
  taskKinds: `{ taskKinds { name } }`,
  start: `mutation($input: StartTaskInput!) { startTask(input: $input) { ${VIEW} } }`,
  cancel: `mutation($id: ID!) { cancelTask(id: $id) { ${VIEW} } }`,
  provide: `mutation($id: ID!, $value: JSON!) { provideTaskInput(id: $id, key: "decision", value: $value) { ${VIEW} } }`,
  follow: `subscription($id: ID!) { taskUpdated(id: $id) { ${VIEW} } }`,
};

export interface Fixture {
  id: string;
  status: 'INPUT_REQUIRED' | 'COMPLETED';
  inputRequest: { key: string; message: string } | null;
  result: unknown;
}

export let t: TestApp;
export let tokens: Record<Caller, string | null>;
export let aliceToken: string;
/** An approval waiting for its answer; every refused or hidden operation is tried on it and must leave it unchanged. */
export let waiting: Fixture;
export let waitingVersion: number;
/** An approval answered and completed: it has a result. */
export let done: Fixture;

export const mint = (
  sub: string,
  scopes: string[],
  extra: { secret?: string; issuer?: string; audience?: string; ttl?: string | number } = {},
) =>
  mintToken(extra.secret ?? SECRET, {
    sub,
    scopes,
    ttl: extra.ttl ?? '1h',
    issuer: extra.issuer ?? ISSUER,
    audience: extra.audience ?? AUDIENCE,
  });

export function unsigned(claims: Record<string, unknown>): string {
  const part = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
  return `${part({ alg: 'none', typ: 'JWT' })}.${part(claims)}.`;
}

export async function startWaiting(): Promise<string> {
  const started = await t.gql(Q.start, { input: { kind: 'approval', input: INPUT } }, aliceToken);
  expect(started.errors).toBeUndefined();
  const id: string = started.data.startTask.id;
  await eventually(async () => {
    const read = await t.gql(Q.task, { id }, aliceToken);
    return read.data?.task?.status === 'INPUT_REQUIRED' ? true : undefined;
  });
  return id;
}

/** Starts the server with issuer and audience checks, mints one token per caller, and sets up the fixtures. */
export function useMatrixServer(): void {
  beforeAll(async () => {
    t = await startTestApp({
      env: { AUTH_ISSUER: ISSUER, AUTH_AUDIENCE: AUDIENCE, RUNNER_CONCURRENCY: '64' },
    });
    const now = Math.floor(Date.now() / 1000);
    tokens = {
      owner: await mint('alice', [READ, WRITE]),
      'other principal': await mint('bob', [READ, WRITE]),
      admin: await mint('root', [READ, WRITE, ADMIN]),
      'read-only': await mint('alice', [READ]),
      'write-only': await mint('alice', [WRITE]),
      'no scopes': await mint('alice', []),
      'no token': null,
      // Past exp by more than the clock-skew tolerance.
      'expired token': await mint('alice', [READ, WRITE], { ttl: -120 }),
      'foreign signature': await mint('alice', [READ, WRITE, ADMIN], {
        secret: 'some-other-secret-0123456789abcdefghij',
      }),
      'alg none': unsigned({
        sub: 'alice',
        scope: `${READ} ${WRITE} ${ADMIN}`,
        iss: ISSUER,
        aud: AUDIENCE,
        iat: now,
        exp: now + 3600,
      }),
      'wrong issuer': await mint('alice', [READ, WRITE], { issuer: 'https://elsewhere.test/' }),
      'wrong audience': await mint('alice', [READ, WRITE], { audience: 'another-service' }),
    };
    aliceToken = tokens.owner!;

    const waitingId = await startWaiting();
    waiting = {
      id: waitingId,
      status: 'INPUT_REQUIRED',
      inputRequest: { key: 'decision', message: QUESTION },
      result: null,
    };
    waitingVersion = (await t.gql(Q.task, { id: waitingId }, aliceToken)).data.task.version;

    const doneId = await startWaiting();
    const answered = await t.gql(Q.provide, { id: doneId, value: ANSWER }, aliceToken);
    expect(answered.errors).toBeUndefined();
    await eventually(async () =>
      (await t.gql(Q.task, { id: doneId }, aliceToken)).data?.task?.status === 'COMPLETED'
        ? true
        : undefined,
    );
    done = { id: doneId, status: 'COMPLETED', inputRequest: null, result: ANSWER };
  });
  afterAll(() => t?.stop());
}

// ---- how each answer must look ----

export function expectGraphQLView(task: any, fixture: Fixture, view: 'owner' | 'admin'): void {
  expect(task).toMatchObject({ id: fixture.id, kind: 'approval', status: fixture.status });
  if (view === 'owner') {
    expect(task).toMatchObject({
      input: INPUT,
      result: fixture.result,
      inputRequest: fixture.inputRequest,
      owner: null,
    });
  } else {
    expect(task).toMatchObject({ input: null, result: null, inputRequest: null, owner: 'alice' });
    // Nor anywhere else: the question lives in the input and the input request.
    expect(JSON.stringify(task)).not.toContain(QUESTION);
  }
}

export function expectRestView(handle: any, fixture: Fixture, view: 'owner' | 'admin'): void {
  expect(handle).toMatchObject({
    resultType: 'task',
    taskId: fixture.id,
    status: fixture.status.toLowerCase(),
  });
  expect(JSON.stringify(handle)).not.toContain('"owner"');
  if (view === 'owner') {
    if (fixture.result) expect(handle.result).toEqual(fixture.result);
    if (fixture.inputRequest) expect(handle.inputRequest).toMatchObject(fixture.inputRequest);
  } else {
    expect(handle).not.toHaveProperty('result');
    expect(handle).not.toHaveProperty('inputRequest');
    expect(JSON.stringify(handle)).not.toContain(QUESTION);
  }
}

/** One error with the contract code, never the masked "Unexpected error.", and no data for the field. */
export function expectGraphQLError(response: GraphQLResponse, field: string, code: string): void {
  expect(response.errors).toHaveLength(1);
  expect(response.errors![0]!.extensions?.code).toBe(code);
  expect(response.errors![0]!.message).not.toBe('Unexpected error.');
  expect(response.errors![0]!.path).toEqual([field]);
  expect(response.data?.[field] ?? null).toBeNull();
}

export const refusal = (outcome: Outcome) => (outcome === 'F' ? 'FORBIDDEN' : 'UNAUTHENTICATED');
export const STATUS_OF = { F: 403, U: 401 } as const;

/** The same request for `id` and for a random id answer alike, once the ids are set aside. */
export async function expectHiddenLikeRandom<T>(
  id: string,
  ask: (id: string) => Promise<T>,
): Promise<T> {
  const random = randomUUID();
  const [mine, unknown] = [await ask(id), await ask(random)];
  expect(JSON.stringify(mine).replaceAll(id, '<id>')).toBe(
    JSON.stringify(unknown).replaceAll(random, '<id>'),
  );
  return mine;
}

export async function expectWaitingUnchanged(): Promise<void> {
  const read = await t.gql(Q.task, { id: waiting.id }, aliceToken);
  expect(read.data.task).toMatchObject({ status: 'INPUT_REQUIRED', version: waitingVersion });
}

// ---- the faces, as a client sees them ----

export function idsOf(response: GraphQLResponse, field = 'tasks'): string[] {
  return response.data[field].edges.map((edge: any) => edge.node.id);
}

export const SAYS: Record<Outcome, string> = {
  owner: 'answers with the payloads',
  admin: 'answers with metadata and owner, payloads null',
  ok: 'is allowed',
  hidden: 'answers exactly as for a random id',
  F: 'is FORBIDDEN',
  U: 'is UNAUTHENTICATED',
};

/** This face's cells of the matrix, one `it` per operation, named as they always were. */
export function describeMatrix(
  checks: Partial<Record<CheckedOp, (outcome: Outcome, token: string | null) => Promise<void>>>,
): void {
  const column = (op: CheckedOp) =>
    OPS.indexOf(op in SAME_AS ? SAME_AS[op as keyof typeof SAME_AS] : (op as Op));
  describe.each(Object.keys(MATRIX) as Caller[])('caller: %s', (caller) => {
    const ops: CheckedOp[] = [...OPS, ...(Object.keys(SAME_AS) as CheckedOp[])];
    const cells = ops
      .map((op) => ({ op, outcome: MATRIX[caller][column(op)]! }))
      .filter((cell) => cell.op in checks);
    it.each(cells.map((cell) => [`${cell.op} ${SAYS[cell.outcome]}`, cell] as const))(
      '%s',
      async (_name, { op, outcome }) => {
        await checks[op]!(outcome, tokens[caller]);
      },
    );
  });
}
