import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_SCOPES, collect, eventually, startTestApp, type TestApp } from '../helpers/app.js';

/**
 * Who sees which part of DESIGN §16 over GraphQL: `Task.steps` and `Task.children` for the
 * owner and admins, `TaskStep.result` and `signalUrl` for the owner only (admins read null, as
 * for `Task.result`), nothing for another principal — on queries and on subscriptions.
 */

const STEPS = 'steps { name state childId result signalUrl }';
const VIEW = `id parentId ${STEPS} children { edges { node { id parentId } } }`;
const GET = `query($id: ID!) { task(id: $id) { ${VIEW} } }`;
const BY_PARENT = `query($filter: TaskFilter) { tasks(filter: $filter) { edges { node { id } } } }`;

let t: TestApp;
let alice: string;
let bob: string;
let root: string;
let readOnly: string;
/** Completed: stage-1 journalled, one child started and awaited. */
let done: string;
/** Suspended on its signal `go`, whose URL is minted. */
let waiting: string;
let child: string;

beforeAll(async () => {
  t = await startTestApp();
  [alice, bob, root, readOnly] = await Promise.all([
    t.token('alice'),
    t.token('bob'),
    t.token('root', ADMIN_SCOPES),
    t.token('alice', ['tasks:read']),
  ]);
  const start = async (input: unknown) =>
    (
      await t.gql(
        `mutation($input: StartTaskInput!) { startTask(input: $input) { id } }`,
        { input: { kind: 'pipeline', input } },
        alice,
      )
    ).data.startTask.id as string;
  [done, waiting] = await Promise.all([
    start({ stages: 1, children: 1 }),
    start({ stages: 1, signal: 'go' }),
  ]);
  await eventually(async () => {
    const [a, b] = await Promise.all([
      t.gql(GET, { id: done }, alice),
      t.gql(GET, { id: waiting }, alice),
    ]);
    const finished = a.data?.task.steps.some(
      (s: any) => s.name === 'child-1' && s.state === 'COMPLETED',
    );
    const suspended = b.data?.task.steps.some((s: any) => s.signalUrl);
    return finished && suspended ? true : undefined;
  });
  child = (await t.gql(GET, { id: done }, alice)).data.task.children.edges[0].node.id;
});
afterAll(() => t?.stop());

const stepOf = (task: any, name: string) => task.steps.find((s: any) => s.name === name);

describe('Task.steps and Task.children', () => {
  it('the owner reads every field, results and signal URLs included', async () => {
    for (const token of [alice, readOnly]) {
      const [a, b] = await Promise.all([
        t.gql(GET, { id: done }, token),
        t.gql(GET, { id: waiting }, token),
      ]);
      expect(a.errors).toBeUndefined();
      expect(stepOf(a.data.task, 'stage-1').result).toMatchObject({ stage: 1 });
      expect(stepOf(a.data.task, 'child-1')).toMatchObject({ childId: child, state: 'COMPLETED' });
      expect(a.data.task.children.edges).toEqual([{ node: { id: child, parentId: done } }]);
      expect(stepOf(b.data.task, 'go').signalUrl).toMatch(/\/v1\/signals\//);
    }
  });

  it('an admin reads the journal and the children of anyone’s task, without results or signal URLs', async () => {
    const [a, b] = await Promise.all([
      t.gql(GET, { id: done }, root),
      t.gql(GET, { id: waiting }, root),
    ]);
    expect(a.errors).toBeUndefined();
    expect(stepOf(a.data.task, 'stage-1')).toEqual({
      name: 'stage-1',
      state: 'COMPLETED',
      childId: null,
      result: null,
      signalUrl: null,
    });
    expect(stepOf(a.data.task, 'child-1')).toMatchObject({ childId: child, result: null });
    expect(a.data.task.children.edges).toEqual([{ node: { id: child, parentId: done } }]);
    expect(stepOf(b.data.task, 'go')).toMatchObject({ state: 'WAITING_SIGNAL', signalUrl: null });
    const listed = await t.gql(BY_PARENT, { filter: { parentId: done, owner: 'alice' } }, root);
    expect(listed.data.tasks.edges).toEqual([{ node: { id: child } }]);
  });

  it('an admin following a task over graphql-ws reads no results either', async () => {
    const { events, error } = await collect(
      t.ws(root),
      `subscription($id: ID!) { taskUpdated(id: $id) { id ${STEPS} } }`,
      { id: done },
    );
    expect(error).toBeUndefined();
    expect(events[0].taskUpdated.steps.length).toBeGreaterThan(0);
    for (const step of events[0].taskUpdated.steps) expect(step.result).toBeNull();
  });

  it('another principal sees nothing of the task, its children or its journal', async () => {
    expect(await t.gql(GET, { id: done }, bob)).toEqual({ data: { task: null } });
    expect((await t.gql(GET, { id: child }, bob)).data.task).toBeNull();
    const own = await t.gql(BY_PARENT, { filter: { parentId: done } }, bob);
    expect(own.data.tasks.edges).toEqual([]);
    const named = await t.gql(BY_PARENT, { filter: { parentId: done, owner: 'alice' } }, bob);
    expect(named.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    const signal = await t.gql(
      `mutation($id: ID!) { signalTask(id: $id, name: "go", payload: 1) { id } }`,
      { id: waiting },
      bob,
    );
    expect(signal.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
    const followed = await collect(
      t.ws(bob),
      `subscription($id: ID!) { taskUpdated(id: $id) { id ${STEPS} } }`,
      { id: waiting },
    );
    expect(followed.events).toEqual([]);
    expect(JSON.stringify(followed.error)).toContain('NOT_FOUND');
  });
});
