import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { printSortedSchema } from '../../../src/faces/graphql/index.js';
import { collect, eventually } from '../../helpers/app.js';
import { alice, bob, t, useFileApp } from '../../helpers/file-app.js';
import {
  CANCEL_TASK as CANCEL,
  GET_TASK as GET,
  START_TASK as START,
} from '../../helpers/operations.js';

useFileApp();

const FOLLOW = `subscription($id: ID!) { taskUpdated(id: $id) { id status version progress result error { code message } } }`;
const LIST = `query($first: Int, $after: String, $status: [TaskStatus!]) {
  tasks(first: $first, after: $after, status: $status) { edges { cursor node { id kind status } } pageInfo { hasNextPage endCursor } } }`;

async function start(
  token: string,
  kind: string,
  input: unknown,
  extra: Record<string, unknown> = {},
) {
  const res = await t.gql(START, { input: { kind, input, ...extra } }, token);
  expect(res.errors).toBeUndefined();
  return res.data.startTask as { id: string; version: number; status: string };
}

async function untilFinal(id: string, token = alice) {
  const { events } = await collect(t.ws(token), FOLLOW, { id });
  return events.at(-1).taskUpdated;
}

describe('starting and reading', () => {
  it('is readable the moment startTask returns it', async () => {
    const handle = await start(alice, 'sleep', { ms: 60_000 });
    expect(handle).toMatchObject({
      kind: 'sleep',
      status: 'WORKING',
      version: 1,
      ttlMs: 3_600_000,
      pollIntervalMs: 1000,
    });
    const read = await t.gql(GET, { id: handle.id }, alice);
    expect(read.data.task).toMatchObject({ id: handle.id, input: { ms: 60_000 } });
    expect(Date.parse(read.data.task.expiresAt) - Date.parse(read.data.task.createdAt)).toBe(
      3_600_000,
    );
  });

  it('polling reaches COMPLETED with the result and full progress', async () => {
    const { id } = await start(alice, 'sleep', { ms: 100, steps: 2 });
    const done = await eventually(async () => {
      const task = (await t.gql(GET, { id }, alice)).data.task;
      return task.status === 'COMPLETED' ? task : undefined;
    });
    expect(done.progress).toBe(1);
    expect(done.result.sleptMs).toBeGreaterThanOrEqual(100);
    expect(done.version).toBeGreaterThan(1);
  });

  it('lists the kinds with their input schemas', async () => {
    const res = await t.gql('{ taskKinds { name description inputSchema } }', {}, alice);
    const names = res.data.taskKinds.map((k: { name: string }) => k.name);
    expect(names).toEqual(expect.arrayContaining(['sleep', 'approval', 'primes', 'export']));
    const sleep = res.data.taskKinds.find((k: { name: string }) => k.name === 'sleep');
    expect(sleep.inputSchema.required).toEqual(['ms']);
  });
});

describe('following a task', () => {
  it('sends the current state first, then increasing versions, and completes after COMPLETED', async () => {
    const { id } = await start(alice, 'sleep', { ms: 200, steps: 4 });
    const { events, error } = await collect(t.ws(alice), FOLLOW, { id });
    expect(error).toBeUndefined();
    const versions = events.map((e) => e.taskUpdated.version);
    expect(versions).toEqual([...versions].sort((a, b) => a - b));
    expect(new Set(versions).size).toBe(versions.length);
    expect(events.at(-1).taskUpdated).toMatchObject({ status: 'COMPLETED', progress: 1 });
  });

  it('sends a finished task once and completes at once', async () => {
    const { id } = await start(alice, 'sleep', { ms: 0 });
    const final = await untilFinal(id);
    const { events } = await collect(t.ws(alice), FOLLOW, { id });
    expect(events).toHaveLength(1);
    expect(events[0].taskUpdated).toEqual(final);
  });

  it('streams the same over Server-Sent Events', async () => {
    const { id } = await start(alice, 'sleep', { ms: 100, steps: 2 });
    const response = await fetch(`${t.url}/graphql`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'text/event-stream',
        authorization: `Bearer ${alice}`,
      },
      body: JSON.stringify({ query: FOLLOW, variables: { id } }),
    });
    expect(response.headers.get('content-type')).toMatch(/text\/event-stream/);
    const text = await response.text(); // the stream ends after the final state
    const events = text
      .split('\n')
      .filter((line) => line.startsWith('data:') && line.length > 6)
      .map((line) => JSON.parse(line.slice(5)))
      .filter((payload) => payload.data);
    const versions = events.map((e) => e.data.taskUpdated.version);
    expect(versions).toEqual([...versions].sort((a, b) => a - b));
    expect(events.at(-1).data.taskUpdated.status).toBe('COMPLETED');
  });

  it('refuses a subscription to an unknown task with NOT_FOUND', async () => {
    const { events, error } = await collect(t.ws(alice), FOLLOW, {
      id: '00000000-0000-4000-8000-000000000000',
    });
    expect(events).toHaveLength(0);
    expect((error as Array<{ extensions: { code: string } }>)[0]?.extensions.code).toBe(
      'NOT_FOUND',
    );
  });
});

describe('cancelling', () => {
  it('sticks, is idempotent, and a finished task answers TASK_TERMINAL', async () => {
    const { id } = await start(alice, 'sleep', { ms: 60_000 });
    const first = await t.gql(CANCEL, { id }, alice);
    expect(first.data.cancelTask).toMatchObject({ id, status: 'CANCELLED', version: 2 });
    const again = await t.gql(CANCEL, { id }, alice);
    expect(again.data.cancelTask).toMatchObject({ status: 'CANCELLED', version: 2 });
    expect((await t.gql(GET, { id }, alice)).data.task.status).toBe('CANCELLED');

    const done = await start(alice, 'sleep', { ms: 0 });
    await untilFinal(done.id);
    const late = await t.gql(CANCEL, { id: done.id }, alice);
    expect(late.data).toBeNull();
    expect(late.errors?.[0]?.extensions?.code).toBe('TASK_TERMINAL');
  });

  it('stops primes promptly and the task stays CANCELLED', async () => {
    const { id } = await start(alice, 'primes', { limit: 1_000_000_000 });
    await eventually(async () =>
      (await t.gql(GET, { id }, alice)).data.task.progress > 0 ? true : undefined,
    );
    await t.gql(CANCEL, { id }, alice);
    await eventually(async () => (t.app.runner?.holds(id) ? undefined : true));
    expect((await t.gql(GET, { id }, alice)).data.task).toMatchObject({
      status: 'CANCELLED',
      result: null,
    });
  });
});

describe('isolation between principals', () => {
  it('gives another principal null, NOT_FOUND, and an empty list', async () => {
    const { id } = await start(alice, 'sleep', { ms: 60_000 });
    expect((await t.gql(GET, { id }, bob)).data.task).toBeNull();
    const cancel = await t.gql(CANCEL, { id }, bob);
    expect(cancel.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
    const unknown = await t.gql(CANCEL, { id: '00000000-0000-4000-8000-000000000000' }, bob);
    expect(cancel.errors?.[0]?.message).toBe(unknown.errors?.[0]?.message);
    const { error } = await collect(t.ws(bob), FOLLOW, { id });
    expect((error as Array<{ extensions: { code: string } }>)[0]?.extensions.code).toBe(
      'NOT_FOUND',
    );
    const listed = await t.gql(LIST, { first: 100 }, bob);
    expect(listed.data.tasks.edges.map((e: { node: { id: string } }) => e.node.id)).not.toContain(
      id,
    );
    expect((await t.gql(GET, { id }, alice)).data.task.status).toBe('WORKING');
  });
});

describe('bad input', () => {
  it('answers BAD_USER_INPUT and stores nothing', async () => {
    const carol = await t.token('carol');
    for (const input of [
      { kind: 'nope', input: {} },
      { kind: 'sleep', input: { ms: -1 } },
      { kind: 'sleep', input: { ms: 'soon' } },
      { kind: 'sleep', input: { ms: 1, extra: true } },
      { kind: 'primes', input: { limit: 1 } },
      { kind: 'sleep', input: { ms: 1 }, idempotencyKey: '' },
    ]) {
      const res = await t.gql(START, { input }, carol);
      expect(res.errors?.[0]?.extensions?.code, JSON.stringify(input)).toBe('BAD_USER_INPUT');
    }
    expect((await t.gql(GET, { id: 'not-a-uuid' }, carol)).errors?.[0]?.extensions?.code).toBe(
      'BAD_USER_INPUT',
    );
    expect((await t.gql(LIST, { first: 101 }, carol)).errors?.[0]?.extensions?.code).toBe(
      'BAD_USER_INPUT',
    );
    expect((await t.gql(LIST, { first: 100 }, carol)).data.tasks.edges).toEqual([]);
  });
});

describe('failures', () => {
  it('a throwing handler gives FAILED with HANDLER_ERROR and its message', async () => {
    const { id } = await start(alice, 'sleep', { ms: 0, fail: 'disk full' });
    expect(await untilFinal(id)).toMatchObject({
      status: 'FAILED',
      error: { code: 'HANDLER_ERROR', message: 'disk full' },
      result: null,
    });
  });
});

describe('primes', () => {
  it('counts π(2·10⁶) = 148 933', async () => {
    const { id } = await start(alice, 'primes', { limit: 2_000_000 });
    expect(await untilFinal(id)).toMatchObject({
      status: 'COMPLETED',
      result: { limit: 2_000_000, count: 148_933 },
    });
  });

  it('answers polls while it computes (the sieve runs off the event loop)', async () => {
    const { id } = await start(alice, 'primes', { limit: 1_000_000_000 });
    // Were the sieve on the main thread, no poll could be answered before it finished.
    const seen: number[] = [];
    for (let i = 0; i < 5; i++) {
      const task = (await t.gql(GET, { id }, alice)).data.task;
      expect(task.status).toBe('WORKING');
      seen.push(task.version);
      await eventually(async () =>
        (await t.gql(GET, { id }, alice)).data.task.version > task.version ? true : undefined,
      );
    }
    expect(new Set(seen).size).toBe(5);
    await t.gql(CANCEL, { id }, alice);
  });
});

describe('pagination', () => {
  it('pages newest first with no overlap and no gap', async () => {
    const dave = await t.token('dave');
    const ids: string[] = [];
    for (let i = 0; i < 7; i++) ids.push((await start(dave, 'sleep', { ms: 60_000 })).id);
    const seen: string[] = [];
    let after: string | null = null;
    for (;;) {
      const page: any = (await t.gql(LIST, { first: 3, after }, dave)).data.tasks;
      seen.push(...page.edges.map((e: { node: { id: string } }) => e.node.id));
      if (!page.pageInfo.hasNextPage) break;
      after = page.pageInfo.endCursor;
    }
    expect(seen).toEqual([...ids].reverse());
    const working = await t.gql(LIST, { first: 100, status: ['COMPLETED'] }, dave);
    expect(working.data.tasks.edges).toEqual([]);
  });
});

describe('the schema', () => {
  it('schema.graphql matches the code-first schema (run `npm run schema` after changing it)', () => {
    const committed = readFileSync(new URL('../../../schema.graphql', import.meta.url), 'utf8');
    expect(printSortedSchema()).toBe(committed);
  });

  it('serves GraphiQL to a browser', async () => {
    const res = await fetch(`${t.url}/graphql`, { headers: { accept: 'text/html' } });
    expect(res.status).toBe(200);
    expect(await res.text()).toMatch(/graphiql/i);
  });

  it('answers health and readiness', async () => {
    expect((await fetch(`${t.url}/healthz`)).status).toBe(200);
    expect((await fetch(`${t.url}/readyz`)).status).toBe(200);
  });
});
