import type { Client } from 'graphql-ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineTaskKind } from '../../src/tasks/kinds.js';
import { TaskAbortedError } from '../../src/tasks/runner/runner.js';
import { ADMIN_SCOPES, eventually, startTestApp, type TestApp } from '../helpers/app.js';
import { untilAborted } from '../helpers/kinds.js';
import { FOLLOW_VERSIONS as FOLLOW, START_TASK as START } from '../helpers/operations.js';
import { restClient } from '../helpers/rest.js';

const GET = `query($id: ID!) { task(id: $id) { id status } }`;
const LIST = `query { tasks(first: 100) { edges { node { id } } } }`;
const CANCEL = `mutation($id: ID!) { cancelTask(id: $id) { id status } }`;
const ANSWER = `mutation($id: ID!, $key: String!, $value: JSON!) { provideTaskInput(id: $id, key: $key, value: $value) { id status } }`;

/** What the test kinds' handlers saw: whether they started, and why their signal was aborted. */
const probes = new Map<string, { started: boolean; reason?: unknown }>();

function watchSignal(taskId: string, signal: AbortSignal): Promise<never> {
  probes.set(taskId, { started: true });
  return untilAborted(signal, (reason) => probes.set(taskId, { started: true, reason }));
}

/** Runs until its signal is aborted. */
const hang = defineTaskKind({
  name: 'hang',
  description: 'runs until aborted',
  inputSchema: {},
  timeoutMs: 600_000,
  run: ({ taskId, signal }) => watchSignal(taskId, signal),
});

/** Asks for input and waits for it (or for its signal). */
const asker = defineTaskKind({
  name: 'asker',
  description: 'waits for input',
  inputSchema: {},
  timeoutMs: 600_000,
  async run({ taskId, signal, requestInput }) {
    const aborted = watchSignal(taskId, signal);
    aborted.catch(() => {});
    return Promise.race([requestInput({ key: 'answer', message: 'say something' }), aborted]);
  },
});

/** The reason the handler of task `id` saw on its signal, once aborted. */
const abortReason = (id: string) => eventually(async () => probes.get(id)?.reason);

interface Followed {
  events: Array<{ id: string; status: string; version: number }>;
  errors: Array<{ message: string; extensions?: Record<string, unknown> }>;
  ended: Promise<{ error?: unknown }>;
}

function follow(client: Client, id: string): Followed {
  const events: Followed['events'] = [];
  const errors: Followed['errors'] = [];
  const ended = new Promise<{ error?: unknown }>((resolve) => {
    client.subscribe<{ taskUpdated: Followed['events'][number] }>(
      { query: FOLLOW, variables: { id } },
      {
        // A refused subscription arrives as one result carrying errors, then completes.
        next: (value) =>
          value.errors
            ? errors.push(...value.errors)
            : value.data && events.push(value.data.taskUpdated),
        error: (error) => resolve({ error }),
        complete: () => resolve({}),
      },
    );
  });
  return { events, errors, ended };
}

describe('expiry, before any purge', () => {
  let t: TestApp;
  let alice: string;
  let bob: string;
  let admin: string;
  let ws: Client;
  let control: string;

  beforeAll(async () => {
    // TASK_MIN_TTL_MS=1 allows a task to expire within the test; the purge never runs here.
    t = await startTestApp({
      env: { TASK_MIN_TTL_MS: '1', TASK_PURGE_INTERVAL_MS: '86400000' },
      kinds: [hang, asker],
    });
    alice = await t.token('alice');
    bob = await t.token('bob');
    admin = await t.token('root', ADMIN_SCOPES);
    const live = await t.gql(START, { input: { kind: 'hang', ttlMs: 600_000 } }, alice);
    control = live.data.startTask.id;
    // Open the socket before any short-lived task exists, so subscribing later costs one message.
    ws = t.ws(alice);
    const watching = follow(ws, control);
    await eventually(async () => watching.events.length > 0 || undefined);
  });
  afterAll(() => t?.stop());

  /**
   * Starts a task with a short ttlMs and follows it until the precondition holds (the handler
   * runs, the subscription delivered the wanted status) — all of which can only happen before
   * expiry. On a slow machine the task may expire first; then it tries again with a longer ttl.
   */
  async function expiringTask(
    kind: string,
    wantStatus: string,
  ): Promise<{ id: string; ttlMs: number; followed: Followed }> {
    for (let ttlMs = 300; ttlMs <= 20_000; ttlMs *= 4) {
      const started = await t.gql(START, { input: { kind, ttlMs } }, alice);
      expect(started.errors).toBeUndefined();
      const id: string = started.data.startTask.id;
      expect(started.data.startTask.ttlMs).toBe(ttlMs);
      const followed = follow(ws, id);
      const ready = () =>
        probes.get(id)?.started && followed.events.some((e) => e.status === wantStatus);
      const outcome = await Promise.race([
        followed.ended.then(() => 'ended' as const),
        eventually(async () => (ready() ? ('ready' as const) : undefined), ttlMs + 10_000, 5),
      ]);
      if (outcome === 'ready') return { id, ttlMs, followed };
    }
    throw new Error('the task expired before its handler ran, even with a 20 s ttl');
  }

  async function expectGoneEverywhere(id: string, status: string): Promise<void> {
    // GraphQL: query null (for the owner and for an admin), mutations NOT_FOUND, absent from the list.
    expect((await t.gql(GET, { id }, alice)).data.task).toBeNull();
    expect((await t.gql(GET, { id }, admin)).data.task).toBeNull();
    const cancelled = await t.gql(CANCEL, { id }, alice);
    expect(cancelled.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
    const answered = await t.gql(ANSWER, { id, key: 'answer', value: 'late' }, alice);
    expect(answered.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
    const listed = (await t.gql(LIST, {}, alice)).data.tasks.edges.map(
      (e: { node: { id: string } }) => e.node.id,
    );
    expect(listed).toContain(control);
    expect(listed).not.toContain(id);
    // A new subscription is refused like an unknown id.
    const again = follow(ws, id);
    expect(await again.ended).toEqual({});
    expect(again.events).toEqual([]);
    expect(again.errors.map((e) => e.extensions?.code)).toEqual(['NOT_FOUND']);

    // REST: 404 on every route, with the same body as an id that never existed; absent from the list.
    const call = restClient(t.url);
    const unknown = await call('GET', '/v1/jobs/7d0f3e1c-59a4-4c1e-9d1b-2f6f0b7a1e55', {
      token: alice,
    });
    for (const [method, path, body] of [
      ['GET', `/v1/jobs/${id}`, undefined],
      ['DELETE', `/v1/jobs/${id}`, undefined],
      ['POST', `/v1/jobs/${id}/input`, { key: 'answer', value: 'late' }],
    ] as const) {
      const res = await call(method, path, { token: alice, body });
      expect(res.status, `${method} ${path}`).toBe(404);
      expect(res.text).toBe(unknown.text);
    }
    const restList = await call('GET', '/v1/jobs?limit=100', { token: alice });
    expect(restList.body.tasks.map((h: { taskId: string }) => h.taskId)).not.toContain(id);

    // Bob's view is unchanged too: still nothing.
    expect((await t.gql(GET, { id }, bob)).data.task).toBeNull();

    // None of that was the purge: the row is still in the table, untouched by the late cancel and answer.
    const row = await t.app.db.kysely
      .selectFrom('tasks')
      .select(['status', 'answers'])
      .where('id', '=', id)
      .executeTakeFirst();
    expect(row).toBeDefined();
    expect(row!.status).toBe(status);
    expect(row!.answers).toEqual({});
  }

  it('ends a live subscription, aborts the running handler and hides a working task on every path', async () => {
    const { id, followed } = await expiringTask('hang', 'WORKING');
    expect(await followed.ended).toEqual({});
    expect(followed.errors).toEqual([]);
    expect(followed.events.at(-1)?.status).toBe('WORKING');
    const reason = await abortReason(id);
    expect(reason).toBeInstanceOf(TaskAbortedError);
    expect((reason as TaskAbortedError).cause).toBe('expired');
    await expectGoneEverywhere(id, 'working');
  });

  it('does the same for a task waiting for input: the answer is refused as NOT_FOUND', async () => {
    const { id, followed } = await expiringTask('asker', 'INPUT_REQUIRED');
    expect(await followed.ended).toEqual({});
    expect(followed.errors).toEqual([]);
    expect(followed.events.at(-1)?.status).toBe('INPUT_REQUIRED');
    const reason = await abortReason(id);
    expect(reason).toBeInstanceOf(TaskAbortedError);
    expect((reason as TaskAbortedError).cause).toBe('expired');
    await expectGoneEverywhere(id, 'input_required');
  });

  it('keeps an unexpired task of the same owner visible throughout', async () => {
    expect((await t.gql(GET, { id: control }, alice)).data.task).toEqual({
      id: control,
      status: 'WORKING',
    });
    expect(probes.get(control)?.reason).toBeUndefined();
  });
});
