import type { Plugin } from 'graphql-yoga';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JIT_AFTER_RUNS } from '../../../src/faces/graphql/jit.js';
import { ADMIN_SCOPES, startTestApp, type TestApp } from '../../helpers/app.js';
import { CANCEL_TASK, GET_TASK, POLL_HANDLE, START_HANDLE } from '../../helpers/operations.js';

/**
 * An operation run often is compiled (graphql-jit) after JIT_AFTER_RUNS interpreted runs: every
 * answer after that is the one graphql-js gave, data and errors alike (masking, codes,
 * locations, field authorization), on the direct path and over GET.
 */

const RUNS = JIT_AFTER_RUNS + 2;
const UNKNOWN = '00000000-0000-4000-8000-000000000000';

/** The execute function each operation got, seen by a plugin after the server's own. */
const executors: unknown[] = [];
const observer: Plugin = {
  onExecute({ executeFn }) {
    executors.push(executeFn);
  },
};

let t: TestApp;
const tokens: Record<string, string | null> = { none: null };
let id: string;

beforeAll(async () => {
  // No runner: the task stays exactly as started, so every answer about it is the same.
  t = await startTestApp({ env: { ROLE: 'api' }, graphqlPlugins: [observer] });
  tokens.alice = await t.token('alice');
  tokens.bob = await t.token('bob');
  tokens.admin = await t.token('root', ADMIN_SCOPES);
  tokens.writer = await t.token('alice', ['tasks:write']);
  const started = await t.gql(
    START_HANDLE,
    { input: { kind: 'sleep', input: { ms: 3_600_000 } } },
    tokens.alice,
  );
  id = started.data.startTask.id;
});
afterAll(() => t?.stop());

async function ask(query: string, variables: Record<string, unknown>, token: string | null) {
  const res = await fetch(`${t.url}/graphql`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/graphql-response+json, application/json',
      ...(token ? { authorization: `Bearer ${token}` } : {}),
    },
    body: JSON.stringify({ query, variables }),
  });
  return { status: res.status, type: res.headers.get('content-type'), body: await res.text() };
}

let cases = 0;

/**
 * Sends the operation RUNS times, as a document of its own (a comment apart from any other
 * case's, so its first runs are interpreted); every answer must equal the first.
 */
async function sameEveryRun(query: string, variables: () => Record<string, unknown>, who: string) {
  const document = `${query}\n# case ${++cases}`;
  executors.length = 0;
  const answers = [];
  for (let run = 0; run < RUNS; run++) answers.push(await ask(document, variables(), tokens[who]!));
  for (const answer of answers.slice(1)) expect(answer).toEqual(answers[0]);
  // Interpreted for the first runs, compiled after: the execute function was replaced.
  expect(executors).toHaveLength(RUNS);
  expect(new Set(executors.slice(0, JIT_AFTER_RUNS)).size).toBe(1);
  for (const compiled of executors.slice(JIT_AFTER_RUNS)) expect(compiled).not.toBe(executors[0]);
  return JSON.parse(answers[0]!.body);
}

describe('a compiled operation answers as the interpreted one did', () => {
  it('a poll of the own task', async () => {
    const body = await sameEveryRun(POLL_HANDLE, () => ({ id }), 'alice');
    expect(body.data.task).toMatchObject({ id, status: 'WORKING' });
  });

  it("every field the owner reads, and an admin's view without payloads", async () => {
    const query = GET_TASK.replace('inputRequest', 'owner labels inputRequest');
    const own = await sameEveryRun(query, () => ({ id }), 'alice');
    expect(own.data.task).toMatchObject({ input: { ms: 3_600_000 }, owner: null });
    const admin = await sameEveryRun(query, () => ({ id }), 'admin');
    expect(admin.data.task).toMatchObject({ id, input: null, owner: 'alice' });
  });

  it("another principal's task is null", async () => {
    const body = await sameEveryRun(POLL_HANDLE, () => ({ id }), 'bob');
    expect(body).toEqual({ data: { task: null } });
  });

  it('a list, nested objects and a JSON scalar', async () => {
    const query =
      '{ tasks(first: 5) { edges { cursor node { id __typename } } pageInfo { hasNextPage } } taskKinds { name inputSchema } }';
    const body = await sameEveryRun(query, () => ({}), 'alice');
    expect(body.data.tasks.edges).toHaveLength(1);
  });

  it('refusals keep their codes and locations', async () => {
    const missing = await sameEveryRun(POLL_HANDLE, () => ({ id }), 'none');
    expect(missing.errors[0]).toMatchObject({
      extensions: { code: 'UNAUTHENTICATED' },
      locations: [{ line: 1, column: 19 }],
      path: ['task'],
    });
    const scope = await sameEveryRun(POLL_HANDLE, () => ({ id }), 'writer');
    expect(scope.errors[0].extensions.code).toBe('FORBIDDEN');
  });

  it('expected failures keep message, code and locations', async () => {
    const malformed = await sameEveryRun(POLL_HANDLE, () => ({ id: 'not-a-uuid' }), 'alice');
    expect(malformed.errors[0]).toMatchObject({ extensions: { code: 'BAD_USER_INPUT' } });
    expect(malformed.errors[0].locations).toEqual([{ line: 1, column: 19 }]);
    const unknown = await sameEveryRun(CANCEL_TASK, () => ({ id: UNKNOWN }), 'alice');
    expect(unknown.errors[0]).toMatchObject({
      message: 'Task not found.',
      extensions: { code: 'NOT_FOUND' },
      path: ['cancelTask'],
    });
  });

  it('variables that do not fit their types', async () => {
    const absent = await sameEveryRun(POLL_HANDLE, () => ({}), 'alice');
    expect(absent.errors[0].message).toMatch(/\$id/);
    const wrong = await sameEveryRun(POLL_HANDLE, () => ({ id: { not: 'an id' } }), 'alice');
    expect(wrong.errors[0].message).toMatch(/\$id/);
  });

  it("a JSON literal that holds a variable takes each run's value", async () => {
    // graphql-jit folds a scalar's literal once, at compile time, without the variables.
    const query = `mutation ($ms: Int!) {
      startTask(input: { kind: "sleep", input: { ms: $ms } }) { input }
    }`;
    executors.length = 0;
    const inputs = [];
    for (let run = 0; run < RUNS; run++) {
      const answer = await ask(query, { ms: 3_500_000 + run }, tokens.alice!);
      inputs.push(JSON.parse(answer.body).data?.startTask.input);
    }
    expect(inputs).toEqual(Array.from({ length: RUNS }, (_, run) => ({ ms: 3_500_000 + run })));
  });

  it('a JSON literal without variables is compiled and answers as interpreted', async () => {
    const query =
      'mutation { startTask(input: { kind: "sleep", input: { ms: 3500000 } }) { input } }';
    executors.length = 0;
    const inputs = [];
    for (let run = 0; run < RUNS; run++)
      inputs.push(JSON.parse((await ask(query, {}, tokens.alice!)).body).data?.startTask.input);
    expect(inputs).toEqual(Array.from({ length: RUNS }, () => ({ ms: 3_500_000 })));
    expect(executors.at(-1)).not.toBe(executors[0]);
  });

  it('a query over GET', async () => {
    executors.length = 0;
    const query = `${POLL_HANDLE}\n# over GET`;
    const search = new URLSearchParams({ query, variables: JSON.stringify({ id }) });
    const answers = [];
    for (let run = 0; run < RUNS; run++) {
      const res = await fetch(`${t.url}/graphql?${search}`, {
        headers: { authorization: `Bearer ${tokens.alice}` },
      });
      answers.push({ status: res.status, body: await res.text() });
    }
    for (const answer of answers.slice(1)) expect(answer).toEqual(answers[0]);
    expect(executors.at(-1)).not.toBe(executors[0]);
  });

  it('unexpected errors are masked', async () => {
    // Break the store under the running server: every read of an uncached task now fails.
    await sql`alter table tasks rename to tasks_gone`.execute(t.app.db.kysely);
    try {
      const body = await sameEveryRun(POLL_HANDLE, () => ({ id: UNKNOWN }), 'alice');
      expect(body.errors).toEqual([
        {
          message: 'Unexpected error.',
          locations: [{ line: 1, column: 19 }],
          path: ['task'],
          extensions: { code: 'INTERNAL_SERVER_ERROR' },
        },
      ]);
      expect(body.data).toEqual({ task: null });
    } finally {
      await sql`alter table tasks_gone rename to tasks`.execute(t.app.db.kysely);
    }
  });
});
