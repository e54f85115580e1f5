import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../../helpers/app.js';

/**
 * Relay's Node on the GraphQL face: a task refetched by id alone. Who may see what is the
 * authorization matrix's (test/auth/matrix-graphql.test.ts, node and nodes beside task);
 * here, what Relay relies on and what a list of ids may hold.
 */

let t: TestApp;
let alice: string;
let bob: string;
beforeAll(async () => {
  t = await startTestApp();
  [alice, bob] = await Promise.all([t.token('alice'), t.token('bob')]);
});
afterAll(() => t?.stop());

async function start(token: string): Promise<string> {
  const started = await t.gql(
    'mutation { startTask(input: { kind: "sleep", input: { ms: 60000 } }) { id } }',
    {},
    token,
  );
  return started.data.startTask.id;
}

describe('node(id)', () => {
  it('refetches a task by the id every face uses, through a fragment on Node', async () => {
    const id = await start(alice);
    const read = await t.gql(
      `query($id: ID!) { node(id: $id) { id __typename ...Refetch } }
       fragment Refetch on Node { ... on Task { kind status } }`,
      { id },
      alice,
    );
    expect(read).toEqual({
      data: { node: { id, __typename: 'Task', kind: 'sleep', status: 'WORKING' } },
    });
    const rest = await fetch(`${t.url}/v1/jobs/${id}`, {
      headers: { authorization: `Bearer ${alice}` },
    });
    expect(((await rest.json()) as { taskId: string }).taskId).toBe(id);
  });

  it('answers a malformed id BAD_USER_INPUT, as task(id) does', async () => {
    for (const field of ['task', 'node']) {
      const read = await t.gql(`{ ${field}(id: "not-a-uuid") { id } }`, {}, alice);
      expect(read.data).toEqual({ [field]: null });
      expect(read.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
    }
  });
});

describe('nodes(ids)', () => {
  it('answers each id in order: yours, null for another’s or an unknown one, an error for a malformed one', async () => {
    const [mine, theirs] = await Promise.all([start(alice), start(bob)]);
    const read = await t.gql(
      'query($ids: [ID!]!) { nodes(ids: $ids) { id } }',
      { ids: [mine, theirs, randomUUID(), 'nope', mine] },
      alice,
    );
    expect(read.data).toEqual({ nodes: [{ id: mine }, null, null, null, { id: mine }] });
    expect(read.errors).toHaveLength(1);
    expect(read.errors![0]).toMatchObject({
      path: ['nodes', 3],
      extensions: { code: 'BAD_USER_INPUT' },
    });
  });

  it('takes at most 100 ids', async () => {
    const ids = Array.from({ length: 101 }, () => randomUUID());
    const read = await t.gql('query($ids: [ID!]!) { nodes(ids: $ids) { id } }', { ids }, alice);
    expect(read.data).toBeNull();
    expect(read.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
    const most = await t.gql(
      'query($ids: [ID!]!) { nodes(ids: $ids) { id } }',
      { ids: ids.slice(1) },
      alice,
    );
    expect(most.errors).toBeUndefined();
    expect(most.data.nodes).toHaveLength(100);
  });
});
