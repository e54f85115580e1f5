import { randomUUID } from 'node:crypto';
import { expect } from 'vitest';
import type { GraphQLResponse } from '../helpers/app.js';
import {
  ANSWER,
  type CheckedOp,
  describeMatrix,
  done,
  expectGraphQLError,
  expectGraphQLView,
  expectHiddenLikeRandom,
  expectWaitingUnchanged,
  INPUT,
  idsOf,
  type Outcome,
  Q,
  refusal,
  startWaiting,
  t,
  useMatrixServer,
  waiting,
} from '../helpers/auth-matrix.js';

/**
 * The authorization matrix, GraphQL face: queries, mutations and the taskUpdated subscription
 * over WebSocket and SSE, against every kind of caller. Cells and setup: helpers/auth-matrix.ts.
 */

useMatrixServer();

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

// ---- one check per operation ----

const CHECKS: Partial<
  Record<CheckedOp, (outcome: Outcome, token: string | null) => Promise<void>>
> = {
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

  // Relay's refetch answers as task(id) does, cell for cell, under the Node interface.
  async 'node(id)'(outcome, token) {
    for (const fixture of [waiting, done]) {
      if (outcome === 'owner' || outcome === 'admin') {
        const read = await t.gql(Q.node, { id: fixture.id }, token);
        expect(read.errors).toBeUndefined();
        expect(read.data.node.__typename).toBe('Task');
        expectGraphQLView(read.data.node, fixture, outcome);
      } else if (outcome === 'hidden') {
        const read = await expectHiddenLikeRandom(fixture.id, (id) => t.gql(Q.node, { id }, token));
        expect(read).toEqual({ data: { node: null } });
      } else {
        expectGraphQLError(
          await t.gql(Q.node, { id: fixture.id }, token),
          'node',
          refusal(outcome),
        );
      }
    }
  },

  async 'nodes(ids)'(outcome, token) {
    const ids = [waiting.id, done.id];
    if (outcome === 'owner' || outcome === 'admin') {
      const read = await t.gql(Q.nodes, { ids }, token);
      expect(read.errors).toBeUndefined();
      expect(read.data.nodes).toHaveLength(2);
      expectGraphQLView(read.data.nodes[0], waiting, outcome);
      expectGraphQLView(read.data.nodes[1], done, outcome);
    } else if (outcome === 'hidden') {
      const read = await expectHiddenLikeRandom(waiting.id, (id) =>
        t.gql(Q.nodes, { ids: [id] }, token),
      );
      expect(read).toEqual({ data: { nodes: [null] } });
    } else {
      expectGraphQLError(await t.gql(Q.nodes, { ids }, token), 'nodes', refusal(outcome));
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
};

describeMatrix(CHECKS);
