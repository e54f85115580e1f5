import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { eventually, startTestApp, type TestApp } from '../../helpers/app.js';

/**
 * DESIGN §16 over GraphQL: `Task.steps`, `Task.parentId`, `Task.children`, `TaskFilter.parentId`
 * and `retryTask(fromStep)`, driven through the built-in `pipeline` over HTTP and graphql-ws.
 */

const STEP = 'name state attempts startedAt endedAt wakeAt childId signalUrl error { code } result';
const START = `mutation($input: StartTaskInput!) { startTask(input: $input) { id parentId } }`;
const GET = `query($id: ID!) { task(id: $id) {
  id status parentId steps { ${STEP} }
  children(first: 10) { edges { node { id kind parentId status } } pageInfo { hasNextPage } }
} }`;
const SIGNAL = `mutation($id: ID!, $name: String!, $payload: JSON) {
  signalTask(id: $id, name: $name, payload: $payload) { id } }`;

let t: TestApp;
let alice: string;
beforeAll(async () => {
  t = await startTestApp();
  alice = await t.token('alice');
});
afterAll(() => t?.stop());

async function start(input: Record<string, unknown>, extra: Record<string, unknown> = {}) {
  const res = await t.gql(START, { input: { kind: 'pipeline', input, ...extra } }, alice);
  expect(res.errors).toBeUndefined();
  expect(res.data.startTask.parentId).toBeNull();
  return res.data.startTask.id as string;
}

const read = async (id: string) => {
  const res = await t.gql(GET, { id }, alice);
  expect(res.errors).toBeUndefined();
  return res.data.task;
};

const ended = (id: string) =>
  eventually(async () => {
    const task = await read(id);
    return task.status === 'WORKING' ? undefined : task;
  });

describe('Task.steps', () => {
  it('shows a sleep as SLEEPING until its wake-up', async () => {
    const id = await start({ stages: 1, sleepMs: 3_600_000 });
    const before = Date.now();
    const task = await eventually(async () => {
      const seen = await read(id);
      return seen.steps.some((s: any) => s.state === 'SLEEPING') ? seen : undefined;
    });
    expect(task.steps.map((s: any) => [s.name, s.state])).toEqual([
      ['stage-1', 'COMPLETED'],
      ['nap', 'SLEEPING'],
    ]);
    const [stage, nap] = task.steps;
    expect(stage).toMatchObject({ attempts: 1, error: null, result: { stage: 1, attempt: 1 } });
    expect(stage.endedAt).not.toBeNull();
    expect(nap).toMatchObject({ attempts: 0, endedAt: null, childId: null, signalUrl: null });
    expect(Date.parse(nap.wakeAt)).toBeGreaterThan(before + 3_500_000);
    await t.gql(`mutation($id: ID!) { cancelTask(id: $id) { id } }`, { id }, alice);
  });

  it('follows a pipeline live over graphql-ws: its signal wait with its URL, then its children', async () => {
    const id = await start({ stages: 2, signal: 'go', children: 2 });
    const events: any[] = [];
    t.ws(alice).subscribe(
      {
        query: `subscription($id: ID!) { taskUpdated(id: $id) { status steps { ${STEP} } } }`,
        variables: { id },
      },
      {
        next: (v) => events.push(v.data?.taskUpdated ?? v),
        error: (err) => events.push({ error: err }),
        complete: () => undefined,
      },
    );
    const waiting = await eventually(async () =>
      events.find((e) => e.steps?.some((s: any) => s.state === 'WAITING_SIGNAL')),
    );
    const wait = waiting.steps.find((s: any) => s.name === 'go');
    expect(wait).toMatchObject({ state: 'WAITING_SIGNAL', wakeAt: null, result: null });
    expect(wait.signalUrl).toMatch(new RegExp(`^${t.url}/v1/signals/[A-Za-z0-9_-]{22,}$`));

    expect((await t.gql(SIGNAL, { id, name: 'go', payload: { ok: 1 } }, alice)).errors).toBe(
      undefined,
    );
    const last = await eventually(async () => events.find((e) => e.status === 'COMPLETED'));
    expect(last.steps.map((s: any) => [s.name, s.state])).toEqual([
      ['stage-1', 'COMPLETED'],
      ['go', 'COMPLETED'],
      ['stage-2', 'COMPLETED'],
      ['child-1', 'COMPLETED'],
      ['child-2', 'COMPLETED'],
    ]);
    // The wait's URL is gone with the wait; its payload is the step's result.
    expect(last.steps[1]).toMatchObject({ signalUrl: null, result: { ok: 1 } });

    const task = await read(id);
    const children = task.children.edges.map((e: any) => e.node);
    expect(children).toHaveLength(2);
    expect(task.children.pageInfo.hasNextPage).toBe(false);
    for (const child of children)
      expect(child).toMatchObject({ kind: 'sleep', parentId: id, status: 'COMPLETED' });
    const childIds = task.steps.filter((s: any) => s.childId).map((s: any) => s.childId);
    expect(childIds.sort()).toEqual(children.map((c: any) => c.id).sort());
  });
});

describe('children and TaskFilter.parentId', () => {
  it('lists a parent’s children with the filter, on tasks and cancelTasks; a malformed id is BAD_USER_INPUT', async () => {
    const parent = await start({ stages: 1, children: 3, childMs: 60_000 });
    const LIST = `query($filter: TaskFilter) { tasks(filter: $filter) { edges { node { id parentId } } } }`;
    const listed = await eventually(async () => {
      const res = await t.gql(LIST, { filter: { parentId: parent } }, alice);
      return res.data?.tasks.edges.length === 3 ? res.data.tasks.edges : undefined;
    });
    for (const { node } of listed) expect(node.parentId).toBe(parent);
    const page = await t.gql(
      `query($id: ID!) { task(id: $id) { children(first: 2) { edges { cursor node { id } } pageInfo { hasNextPage endCursor } } } }`,
      { id: parent },
      alice,
    );
    expect(page.data.task.children.pageInfo.hasNextPage).toBe(true);
    const rest = await t.gql(
      `query($id: ID!, $after: String) { task(id: $id) { children(first: 2, after: $after) { edges { node { id } } pageInfo { hasNextPage } } } }`,
      { id: parent, after: page.data.task.children.pageInfo.endCursor },
      alice,
    );
    expect(rest.data.task.children.edges).toHaveLength(1);
    expect(rest.data.task.children.pageInfo.hasNextPage).toBe(false);

    const bad = await t.gql(LIST, { filter: { parentId: 'not-a-uuid' } }, alice);
    expect(bad.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');

    const cancelled = await t.gql(
      `mutation($filter: TaskFilter!) { cancelTasks(filter: $filter) { matched cancelled } }`,
      { filter: { parentId: parent } },
      alice,
    );
    expect(cancelled.data.cancelTasks).toEqual({ matched: 3, cancelled: 3 });
    await t.gql(`mutation($id: ID!) { cancelTask(id: $id) { id } }`, { id: parent }, alice);
  });

  it('reads the steps and children of a page of tasks in one batch each, not one per task', async () => {
    const ids = await Promise.all([1, 2, 3].map(() => start({ stages: 1, children: 2 })));
    for (const id of ids) await ended(id);
    const steps = vi.spyOn(t.app.tasks.journals, 'stepsOf');
    const children = vi.spyOn(t.app.tasks.tree, 'childrenOfMany');
    try {
      const res = await t.gql(
        `query($filter: TaskFilter) { tasks(first: 50, filter: $filter) { edges { node {
          id steps { name childId } children(first: 5) { edges { node { id parentId steps { name } } } }
        } } } }`,
        { filter: { kind: ['pipeline'] } },
        alice,
      );
      expect(res.errors).toBeUndefined();
      const nodes = res.data.tasks.edges
        .map((e: any) => e.node)
        .filter((n: any) => ids.includes(n.id));
      expect(nodes).toHaveLength(3);
      for (const node of nodes) {
        const kids = node.children.edges.map((e: any) => e.node);
        expect(kids).toHaveLength(2);
        expect(kids.every((k: any) => k.parentId === node.id)).toBe(true);
        expect(kids.every((k: any) => k.steps.length === 0)).toBe(true);
        expect(
          node.steps
            .filter((s: any) => s.childId)
            .map((s: any) => s.childId)
            .sort(),
        ).toEqual(kids.map((k: any) => k.id).sort());
      }
      // One batch for the parents' steps, one for their children, one for the children's steps.
      expect(children).toHaveBeenCalledTimes(1);
      expect(steps).toHaveBeenCalledTimes(2);
      expect(steps.mock.calls[0]![1].length).toBe(res.data.tasks.edges.length);
    } finally {
      steps.mockRestore();
      children.mockRestore();
    }
  });
});

describe('retryTask(fromStep)', () => {
  it('starts the new task with the journal before fromStep, and refuses a step not in it', async () => {
    const id = await start(
      { stages: 3, failAtStage: 2, failTimes: 1 },
      { retry: { maxAttempts: 1 } },
    );
    const failed = await ended(id);
    expect(failed.status).toBe('FAILED');
    const RETRY = `mutation($id: ID!, $fromStep: String) { retryTask(id: $id, fromStep: $fromStep) { id retryOf } }`;
    const unknown = await t.gql(RETRY, { id, fromStep: 'stage-9' }, alice);
    expect(unknown.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');

    const retried = await t.gql(RETRY, { id, fromStep: 'stage-2' }, alice);
    expect(retried.errors).toBeUndefined();
    expect(retried.data.retryTask.retryOf).toBe(id);
    const again = await ended(retried.data.retryTask.id);
    // stage-1 was copied as it was (its instant unchanged), stage-2 ran again.
    expect(again.steps[0]).toEqual(failed.steps[0]);
    expect(again.steps[1]).toMatchObject({ name: 'stage-2', state: 'FAILED' });
    expect(again.steps[1].startedAt).not.toBe(failed.steps[1].startedAt);
  });
});
