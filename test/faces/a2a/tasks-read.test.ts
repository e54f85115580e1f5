import { TaskState } from '@a2a-js/sdk';
import { describe, expect, it } from 'vitest';
import { a2aClient, codeOf, list, rejection, startRequest, UNKNOWN_ID } from '../../helpers/a2a.js';
import {
  alice,
  aliceToken,
  bob,
  fresh,
  restGet,
  t,
  useA2ATasksApp,
} from '../../helpers/a2a-tasks.js';
import { ADMIN_SCOPES, eventually } from '../../helpers/app.js';
import { rest } from '../../helpers/rest.js';

/**
 * The A2A face's methods (DESIGN §10) through the SDK's own client, over real HTTP: GetTask,
 * ListTasks, CancelTask and the extended card, with the errors of each.
 */

/** What the Client adds to each call, for calls made on its transport. */
const V1 = { serviceParameters: { 'A2A-Version': '1.0' } };

useA2ATasksApp();

describe('GetTask', () => {
  it('the task, historyLength accepted, history empty', async () => {
    const started: any = await alice.sendMessage(startRequest('hold', { n: 6 }));
    const task: any = await alice.getTask({ tenant: '', id: started.id, historyLength: 10 });
    expect(task).toMatchObject({ id: started.id, contextId: started.id, history: [] });
  });

  it('a child task names its parent in metadata taskhandle/parentId (DESIGN §16)', async () => {
    const parent = await rest(t.url, 'POST', '/v1/jobs', {
      token: aliceToken,
      body: { kind: 'pipeline', input: { stages: 1, children: 1 } },
    });
    const parentId: string = parent.body.taskId;
    const childId = await eventually(async () => {
      const page = await t.app.tasks.tree.children({ id: 'alice', admin: false }, parentId);
      return page.tasks[0]?.id;
    });
    const child: any = await alice.getTask({ tenant: '', id: childId });
    expect(child.metadata['taskhandle/parentId']).toBe(parentId);
    const top: any = await alice.getTask({ tenant: '', id: parentId });
    expect(top.metadata).not.toHaveProperty('taskhandle/parentId');
  });

  it("an unknown, someone else's or a malformed id: TaskNotFoundError -32001, the same error", async () => {
    const mine: any = await alice.sendMessage(startRequest('hold', { n: 7 }));
    const errors = await Promise.all(
      [mine.id, UNKNOWN_ID, 'not-a-uuid', ''].map((id) =>
        rejection(bob.getTask({ tenant: '', id })),
      ),
    );
    for (const err of errors) {
      expect(codeOf(err)).toBe(-32001);
      expect(err.message).toBe(errors[0].message);
    }
  });

  it('an admin sees the task but not its payloads (the result artifact, the question)', async () => {
    const admin = await a2aClient(t.url, await t.token('root', ADMIN_SCOPES));
    const done: any = await alice.sendMessage(
      startRequest('sleep', { ms: 0 }, { returnImmediately: false }),
    );
    const seen: any = await admin.getTask({ tenant: '', id: done.id });
    expect(seen.status.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(seen.artifacts).toEqual([]);
  });
});

describe('ListTasks', () => {
  it("the caller's tasks, most recently updated first, paged, counted", async () => {
    const client = await fresh('lister');
    const ids: string[] = [];
    for (let n = 0; n < 5; n++)
      ids.push(((await client.sendMessage(startRequest('hold', { n }))) as any).id);
    // Cancelling the oldest makes it the most recently updated.
    await client.cancelTask({ tenant: '', id: ids[0]!, metadata: undefined });
    const expected = [ids[0], ids[4], ids[3], ids[2], ids[1]];

    const all = await client.listTasks(list({ pageSize: undefined }));
    expect(all.tasks.map((task) => task.id)).toEqual(expected);
    expect(all).toMatchObject({ pageSize: 50, totalSize: 5, nextPageToken: '' });

    const seen: string[] = [];
    let pageToken = '';
    let pages = 0;
    do {
      const page = await client.listTasks(list({ pageSize: 2, pageToken }));
      expect(page.totalSize).toBe(5);
      expect(page.pageSize).toBe(2);
      seen.push(...page.tasks.map((task) => task.id));
      pageToken = page.nextPageToken;
      pages++;
    } while (pageToken !== '');
    expect(seen).toEqual(expected);
    expect(pages).toBe(3);
  });

  it("filters by status; never lists another principal's tasks", async () => {
    const client = await fresh('filterer');
    const a: any = await client.sendMessage(startRequest('hold', { n: 1 }));
    await client.sendMessage(startRequest('hold', { n: 2 }));
    await client.cancelTask({ tenant: '', id: a.id, metadata: undefined });
    const canceled = await client.listTasks(list({ status: TaskState.TASK_STATE_CANCELED }));
    expect(canceled.tasks.map((task) => task.id)).toEqual([a.id]);
    expect(canceled.totalSize).toBe(1);
    const rejected = await client.listTasks(list({ status: TaskState.TASK_STATE_REJECTED }));
    expect(rejected).toMatchObject({ tasks: [], totalSize: 0 });
    const other = await fresh('filterer-other');
    expect((await other.listTasks(list({}))).totalSize).toBe(0);
  });

  it('artifacts only with includeArtifacts: true', async () => {
    const client = await fresh('artifacts');
    await client.sendMessage(startRequest('sleep', { ms: 0 }, { returnImmediately: false }));
    const without = await client.listTasks(list({}));
    expect(without.tasks[0]!.artifacts).toEqual([]);
    const withThem = await client.listTasks(list({ includeArtifacts: true }));
    expect(withThem.tasks[0]!.artifacts.map((a) => a.artifactId)).toEqual(['result']);
  });

  it('pageSize 1..100: 0 and 101 are -32602; a token it did not write is -32602', async () => {
    for (const pageSize of [0, 101]) {
      expect(codeOf(await rejection(alice.listTasks(list({ pageSize }))))).toBe(-32602);
    }
    const err = await rejection(alice.listTasks(list({ pageToken: 'garbage' })));
    expect(codeOf(err)).toBe(-32602);
    expect((await alice.listTasks(list({ pageSize: 100 }))).pageSize).toBe(100);
  });
});

describe('CancelTask', () => {
  it('TASK_STATE_CANCELED before the answer, which is the task; again: unchanged', async () => {
    const started: any = await alice.sendMessage(startRequest('hold', { n: 8 }));
    const canceled: any = await alice.cancelTask({
      tenant: '',
      id: started.id,
      metadata: undefined,
    });
    expect(canceled.status.state).toBe(TaskState.TASK_STATE_CANCELED);
    expect((await restGet(started.id)).body.status).toBe('cancelled');
    const again: any = await alice.cancelTask({ tenant: '', id: started.id, metadata: undefined });
    expect(again.status.state).toBe(TaskState.TASK_STATE_CANCELED);
    expect(again.metadata.version).toBe(canceled.metadata.version);
  });

  it('on a completed or failed task: TaskNotCancelableError -32002', async () => {
    for (const input of [{ ms: 0 }, { ms: 0, fail: 'no' }]) {
      const done: any = await alice.sendMessage(
        startRequest('sleep', input, { returnImmediately: false }),
      );
      const err = await rejection(
        alice.cancelTask({ tenant: '', id: done.id, metadata: undefined }),
      );
      expect(codeOf(err)).toBe(-32002);
    }
  });

  it("someone else's task: TaskNotFoundError, and it keeps running", async () => {
    const mine: any = await alice.sendMessage(startRequest('hold', { n: 9 }));
    const err = await rejection(bob.cancelTask({ tenant: '', id: mine.id, metadata: undefined }));
    expect(codeOf(err)).toBe(-32001);
    expect((await restGet(mine.id)).body.status).toBe('working');
  });
});

// Push notifications are offered now (DESIGN §11): test/faces/a2a/push.test.ts.
describe('the extended card, not offered', () => {
  it('GetExtendedAgentCard: -32007', async () => {
    const err = await rejection(alice.transport.getExtendedAgentCard({ tenant: '' }, V1));
    expect(codeOf(err)).toBe(-32007);
  });
});
