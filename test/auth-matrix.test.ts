import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mintToken } from '../src/auth/mint.js';
import {
  eventually,
  type GraphQLResponse,
  SECRET,
  startTestApp,
  type TestApp,
} from './helpers/app.js';

/**
 * Every operation of both faces against every kind of caller, on a server that also checks
 * issuer and audience. "hidden" means: answers exactly as it does for a random id.
 */

const ISSUER = 'https://issuer.test/';
const AUDIENCE = 'taskhandle-tests';
const QUESTION = 'Ship the quarterly report?';
const INPUT = { question: QUESTION };
const ANSWER = { approved: true, comment: 'fine' };
const READ = 'tasks:read';
const WRITE = 'tasks:write';
const ADMIN = 'tasks:admin';

type Caller =
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
type Outcome = 'owner' | 'admin' | 'ok' | 'hidden' | 'F' | 'U';

const OPS = [
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
type Op = (typeof OPS)[number];

const U: Outcome[] = OPS.map(() => 'U');
// prettier-ignore
const MATRIX: Record<Caller, Outcome[]> = {
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

const VIEW =
  'id kind status statusMessage version input result error { code } inputRequest { key message } owner';
const Q = {
  task: `query($id: ID!) { task(id: $id) { ${VIEW} } }`,
  ownTasks: `{ tasks(first: 100) { edges { node { ${VIEW} } } } }`,
  aliceTasks: `{ tasks(owner: "alice", first: 100) { edges { node { ${VIEW} } } } }`,
  taskKinds: `{ taskKinds { name } }`,
  start: `mutation($input: StartTaskInput!) { startTask(input: $input) { ${VIEW} } }`,
  cancel: `mutation($id: ID!) { cancelTask(id: $id) { ${VIEW} } }`,
  provide: `mutation($id: ID!, $value: JSON!) { provideTaskInput(id: $id, key: "decision", value: $value) { ${VIEW} } }`,
  follow: `subscription($id: ID!) { taskUpdated(id: $id) { ${VIEW} } }`,
};

interface Fixture {
  id: string;
  status: 'INPUT_REQUIRED' | 'COMPLETED';
  inputRequest: { key: string; message: string } | null;
  result: unknown;
}

let t: TestApp;
let tokens: Record<Caller, string | null>;
let aliceToken: string;
/** An approval waiting for its answer; every refused or hidden operation is tried on it and must leave it unchanged. */
let waiting: Fixture;
let waitingVersion: number;
/** An approval answered and completed: it has a result. */
let done: Fixture;

const mint = (
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

function unsigned(claims: Record<string, unknown>): string {
  const part = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
  return `${part({ alg: 'none', typ: 'JWT' })}.${part(claims)}.`;
}

async function startWaiting(): Promise<string> {
  const started = await t.gql(Q.start, { input: { kind: 'approval', input: INPUT } }, aliceToken);
  expect(started.errors).toBeUndefined();
  const id: string = started.data.startTask.id;
  await eventually(async () => {
    const read = await t.gql(Q.task, { id }, aliceToken);
    return read.data?.task?.status === 'INPUT_REQUIRED' ? true : undefined;
  });
  return id;
}

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

// ---- how each answer must look ----

function expectGraphQLView(task: any, fixture: Fixture, view: 'owner' | 'admin'): void {
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

function expectRestView(handle: any, fixture: Fixture, view: 'owner' | 'admin'): void {
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
function expectGraphQLError(response: GraphQLResponse, field: string, code: string): void {
  expect(response.errors).toHaveLength(1);
  expect(response.errors![0]!.extensions?.code).toBe(code);
  expect(response.errors![0]!.message).not.toBe('Unexpected error.');
  expect(response.errors![0]!.path).toEqual([field]);
  expect(response.data?.[field] ?? null).toBeNull();
}

const refusal = (outcome: Outcome) => (outcome === 'F' ? 'FORBIDDEN' : 'UNAUTHENTICATED');
const STATUS_OF = { F: 403, U: 401 } as const;

/** The same request for `id` and for a random id answer alike, once the ids are set aside. */
async function expectHiddenLikeRandom<T>(id: string, ask: (id: string) => Promise<T>): Promise<T> {
  const random = randomUUID();
  const [mine, unknown] = [await ask(id), await ask(random)];
  expect(JSON.stringify(mine).replaceAll(id, '<id>')).toBe(
    JSON.stringify(unknown).replaceAll(random, '<id>'),
  );
  return mine;
}

async function expectWaitingUnchanged(): Promise<void> {
  const read = await t.gql(Q.task, { id: waiting.id }, aliceToken);
  expect(read.data.task).toMatchObject({ status: 'INPUT_REQUIRED', version: waitingVersion });
}

// ---- the faces, as a client sees them ----

interface Rest {
  status: number;
  body: any;
  authenticate: string | null;
}

async function rest(
  method: string,
  path: string,
  token: string | null,
  body?: unknown,
): Promise<Rest> {
  const response = await fetch(`${t.url}${path}`, {
    method,
    headers: {
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return {
    status: response.status,
    body: await response.json(),
    authenticate: response.headers.get('www-authenticate'),
  };
}

function expectRestRefusal(response: Rest, outcome: 'F' | 'U'): void {
  expect(response.status).toBe(STATUS_OF[outcome]);
  expect(response.body).toMatchObject({ status: STATUS_OF[outcome], code: refusal(outcome) });
  if (outcome === 'U') expect(response.authenticate).toMatch(/^Bearer/);
}

type WsAnswer = GraphQLResponse & { closeCode?: number };

/** The first thing a graphql-ws subscriber receives: a result, or the socket's close code. */
function firstOverWebSocket(token: string | null, id: string): Promise<WsAnswer> {
  const client = t.ws(token);
  return new Promise<WsAnswer>((resolve) => {
    const stop = client.subscribe(
      { query: Q.follow, variables: { id } },
      {
        next: (value) => {
          resolve(value as WsAnswer);
          stop();
        },
        error: (err) => resolve({ closeCode: (err as { code?: number }).code ?? -1 }),
        complete: () => resolve({ errors: [{ message: 'completed without a result' }] }),
      },
    );
  }).finally(() => client.dispose());
}

/** The first `next` event of a GraphQL subscription over Server-Sent Events. */
async function firstOverSse(token: string | null, id: string): Promise<GraphQLResponse> {
  const abort = new AbortController();
  const response = await fetch(`${t.url}/graphql`, {
    method: 'POST',
    signal: abort.signal,
    headers: {
      'content-type': 'application/json',
      accept: 'text/event-stream',
      ...(token ? { authorization: `Bearer ${token}` } : {}),
    },
    body: JSON.stringify({ query: Q.follow, variables: { id } }),
  });
  expect(response.status).toBe(200);
  const decoder = new TextDecoder();
  let text = '';
  try {
    for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
      text += decoder.decode(chunk, { stream: true });
      const match = /event: next\ndata: (.*)\n\n/.exec(text);
      if (match) return JSON.parse(match[1]!) as GraphQLResponse;
    }
  } finally {
    abort.abort();
  }
  throw new Error(`no event in ${JSON.stringify(text)}`);
}

function idsOf(response: GraphQLResponse, field = 'tasks'): string[] {
  return response.data[field].edges.map((edge: any) => edge.node.id);
}

// ---- one check per operation ----

const CHECKS: Record<Op, (outcome: Outcome, token: string | null) => Promise<void>> = {
  async task(outcome, token) {
    for (const fixture of [waiting, done]) {
      if (outcome === 'owner' || outcome === 'admin') {
        const read = await t.gql(Q.task, { id: fixture.id }, token);
        expect(read.errors).toBeUndefined();
        expectGraphQLView(read.data.task, fixture, outcome);
      } else if (outcome === 'hidden') {
        const read = await expectHiddenLikeRandom(fixture.id, (id) => t.gql(Q.task, { id }, token));
        expect(read).toEqual({ data: { task: null } });
      } else {
        expectGraphQLError(
          await t.gql(Q.task, { id: fixture.id }, token),
          'task',
          refusal(outcome),
        );
      }
    }
  },

  async tasks(outcome, token) {
    const own = await t.gql(Q.ownTasks, {}, token);
    const named = await t.gql(Q.aliceTasks, {}, token);
    if (outcome === 'F' || outcome === 'U') {
      expectGraphQLError(own, 'tasks', refusal(outcome));
      expectGraphQLError(named, 'tasks', refusal(outcome));
      return;
    }
    expect(own.errors).toBeUndefined();
    if (outcome === 'owner') {
      expect(idsOf(own)).toEqual(expect.arrayContaining([waiting.id, done.id]));
    } else {
      // Without `owner`, anyone lists only their own tasks.
      expect(idsOf(own)).not.toContain(waiting.id);
      expect(idsOf(own)).not.toContain(done.id);
    }
    if (outcome === 'hidden') {
      // Naming someone else is refused whether or not they have tasks.
      expectGraphQLError(named, 'tasks', 'FORBIDDEN');
      expectGraphQLError(
        await t.gql(`{ tasks(owner: "nobody-${randomUUID()}") { edges { cursor } } }`, {}, token),
        'tasks',
        'FORBIDDEN',
      );
      return;
    }
    expect(named.errors).toBeUndefined();
    const nodes = new Map(named.data.tasks.edges.map((edge: any) => [edge.node.id, edge.node]));
    for (const fixture of [waiting, done])
      expectGraphQLView(nodes.get(fixture.id), fixture, outcome as 'owner' | 'admin');
  },

  async taskKinds(outcome, token) {
    const kinds = await t.gql(Q.taskKinds, {}, token);
    if (outcome === 'ok') {
      expect(kinds.errors).toBeUndefined();
      expect(kinds.data.taskKinds.map((k: { name: string }) => k.name)).toContain('approval');
    } else {
      expectGraphQLError(kinds, 'taskKinds', refusal(outcome));
    }
  },

  async startTask(outcome, token) {
    const started = await t.gql(Q.start, { input: { kind: 'approval', input: INPUT } }, token);
    if (outcome !== 'ok') return expectGraphQLError(started, 'startTask', refusal(outcome));
    expect(started.errors).toBeUndefined();
    // The starter owns it and sees its input.
    expect(started.data.startTask).toMatchObject({
      kind: 'approval',
      status: 'WORKING',
      version: 1,
      input: INPUT,
    });
  },

  async cancelTask(outcome, token) {
    if (outcome === 'owner' || outcome === 'admin') {
      const id = await startWaiting();
      const cancelled = await t.gql(Q.cancel, { id }, token);
      expect(cancelled.errors).toBeUndefined();
      expect(cancelled.data.cancelTask).toMatchObject({ id, status: 'CANCELLED' });
      expectGraphQLView(
        cancelled.data.cancelTask,
        { id, status: 'CANCELLED' as never, inputRequest: null, result: null },
        outcome,
      );
      return;
    }
    if (outcome === 'hidden') {
      const answer = await expectHiddenLikeRandom(waiting.id, (id) =>
        t.gql(Q.cancel, { id }, token),
      );
      expectGraphQLError(answer, 'cancelTask', 'NOT_FOUND');
    } else {
      expectGraphQLError(
        await t.gql(Q.cancel, { id: waiting.id }, token),
        'cancelTask',
        refusal(outcome),
      );
    }
    await expectWaitingUnchanged();
  },

  async provideTaskInput(outcome, token) {
    if (outcome === 'owner') {
      const id = await startWaiting();
      const answered = await t.gql(Q.provide, { id, value: ANSWER }, token);
      expect(answered.errors).toBeUndefined();
      expect(answered.data.provideTaskInput).toMatchObject({
        id,
        input: INPUT,
        inputRequest: null,
      });
      expect(answered.data.provideTaskInput.status).not.toBe('INPUT_REQUIRED');
      return;
    }
    if (outcome === 'hidden') {
      const answer = await expectHiddenLikeRandom(waiting.id, (id) =>
        t.gql(Q.provide, { id, value: ANSWER }, token),
      );
      expectGraphQLError(answer, 'provideTaskInput', 'NOT_FOUND');
    } else {
      expectGraphQLError(
        await t.gql(Q.provide, { id: waiting.id, value: ANSWER }, token),
        'provideTaskInput',
        refusal(outcome),
      );
    }
    await expectWaitingUnchanged();
  },

  async 'taskUpdated over WebSocket'(outcome, token) {
    for (const fixture of [waiting, done]) {
      if (outcome === 'owner' || outcome === 'admin') {
        const first = await firstOverWebSocket(token, fixture.id);
        expect(first.errors).toBeUndefined();
        expectGraphQLView(first.data.taskUpdated, fixture, outcome);
      } else if (outcome === 'hidden') {
        const first = await expectHiddenLikeRandom(fixture.id, (id) =>
          firstOverWebSocket(token, id),
        );
        expectGraphQLError(first, 'taskUpdated', 'NOT_FOUND');
      } else if (outcome === 'F') {
        expectGraphQLError(await firstOverWebSocket(token, fixture.id), 'taskUpdated', 'FORBIDDEN');
      } else {
        // No valid token: the socket is closed at connection_init, before any operation.
        expect(await firstOverWebSocket(token, fixture.id)).toEqual({ closeCode: 4403 });
      }
    }
  },

  async 'taskUpdated over SSE'(outcome, token) {
    for (const fixture of [waiting, done]) {
      if (outcome === 'owner' || outcome === 'admin') {
        const first = await firstOverSse(token, fixture.id);
        expect(first.errors).toBeUndefined();
        expectGraphQLView(first.data!.taskUpdated, fixture, outcome);
      } else if (outcome === 'hidden') {
        const first = await expectHiddenLikeRandom(fixture.id, (id) => firstOverSse(token, id));
        expectGraphQLError(first, 'taskUpdated', 'NOT_FOUND');
      } else {
        expectGraphQLError(await firstOverSse(token, fixture.id), 'taskUpdated', refusal(outcome));
      }
    }
  },

  async 'GET /v1/jobs/{id}'(outcome, token) {
    for (const fixture of [waiting, done]) {
      if (outcome === 'owner' || outcome === 'admin') {
        const read = await rest('GET', `/v1/jobs/${fixture.id}`, token);
        expect(read.status).toBe(200);
        expectRestView(read.body, fixture, outcome);
      } else if (outcome === 'hidden') {
        const read = await expectHiddenLikeRandom(fixture.id, (id) =>
          rest('GET', `/v1/jobs/${id}`, token),
        );
        expect(read).toMatchObject({ status: 404, body: { code: 'NOT_FOUND' } });
      } else {
        expectRestRefusal(await rest('GET', `/v1/jobs/${fixture.id}`, token), outcome as 'F' | 'U');
      }
    }
  },

  async 'GET /v1/jobs'(outcome, token) {
    const list = await rest('GET', '/v1/jobs?limit=100', token);
    if (outcome === 'F' || outcome === 'U') return expectRestRefusal(list, outcome);
    expect(list.status).toBe(200);
    const handles = new Map(list.body.tasks.map((handle: any) => [handle.taskId, handle]));
    if (outcome === 'owner') {
      for (const fixture of [waiting, done])
        expectRestView(handles.get(fixture.id), fixture, 'owner');
    } else {
      expect(handles.has(waiting.id)).toBe(false);
      expect(handles.has(done.id)).toBe(false);
    }
  },

  async 'POST /v1/jobs'(outcome, token) {
    const accepted = await rest('POST', '/v1/jobs', token, { kind: 'approval', input: INPUT });
    if (outcome !== 'ok') return expectRestRefusal(accepted, outcome as 'F' | 'U');
    expect(accepted.status).toBe(202);
    expect(accepted.body).toMatchObject({ resultType: 'task', status: 'working' });
  },

  async 'DELETE /v1/jobs/{id}'(outcome, token) {
    if (outcome === 'owner' || outcome === 'admin') {
      const id = await startWaiting();
      const cancelled = await rest('DELETE', `/v1/jobs/${id}`, token);
      expect(cancelled.status).toBe(200);
      expectRestView(
        cancelled.body,
        { id, status: 'CANCELLED' as never, inputRequest: null, result: null },
        outcome,
      );
      return;
    }
    if (outcome === 'hidden') {
      const answer = await expectHiddenLikeRandom(waiting.id, (id) =>
        rest('DELETE', `/v1/jobs/${id}`, token),
      );
      expect(answer).toMatchObject({ status: 404, body: { code: 'NOT_FOUND' } });
    } else {
      expectRestRefusal(
        await rest('DELETE', `/v1/jobs/${waiting.id}`, token),
        outcome as 'F' | 'U',
      );
    }
    await expectWaitingUnchanged();
  },

  async 'POST /v1/jobs/{id}/input'(outcome, token) {
    const body = { key: 'decision', value: ANSWER };
    if (outcome === 'owner') {
      const id = await startWaiting();
      const answered = await rest('POST', `/v1/jobs/${id}/input`, token, body);
      expect(answered.status).toBe(200);
      expect(answered.body).toMatchObject({ taskId: id });
      expect(answered.body.status).not.toBe('input_required');
      return;
    }
    if (outcome === 'hidden') {
      const answer = await expectHiddenLikeRandom(waiting.id, (id) =>
        rest('POST', `/v1/jobs/${id}/input`, token, body),
      );
      expect(answer).toMatchObject({ status: 404, body: { code: 'NOT_FOUND' } });
    } else {
      expectRestRefusal(
        await rest('POST', `/v1/jobs/${waiting.id}/input`, token, body),
        outcome as 'F' | 'U',
      );
    }
    await expectWaitingUnchanged();
  },
};

const SAYS: Record<Outcome, string> = {
  owner: 'answers with the payloads',
  admin: 'answers with metadata and owner, payloads null',
  ok: 'is allowed',
  hidden: 'answers exactly as for a random id',
  F: 'is FORBIDDEN',
  U: 'is UNAUTHENTICATED',
};

describe.each(Object.keys(MATRIX) as Caller[])('caller: %s', (caller) => {
  const cells = OPS.map((op, i) => ({ op, outcome: MATRIX[caller][i]! }));
  it.each(cells.map((cell) => [`${cell.op} ${SAYS[cell.outcome]}`, cell] as const))(
    '%s',
    async (_name, { op, outcome }) => {
      await CHECKS[op](outcome, tokens[caller]);
    },
  );
});
