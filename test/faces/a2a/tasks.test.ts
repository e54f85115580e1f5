import { Role, TaskState } from '@a2a-js/sdk';
import { describe, expect, it } from 'vitest';
import {
  a2aClient,
  answerRequest,
  codeOf,
  list,
  messageId,
  rejection,
  startRequest,
  UNKNOWN_ID,
} from '../../helpers/a2a.js';
import {
  alice,
  aliceToken,
  bob,
  fresh,
  restGet,
  t,
  useA2ATasksApp,
} from '../../helpers/a2a-tasks.js';
import { eventually } from '../../helpers/app.js';
import { rest } from '../../helpers/rest.js';

/**
 * The A2A face's methods (DESIGN §10) through the SDK's own client, over real HTTP: starting
 * and answering with SendMessage, the task's mapping, and the errors, each with what it leaves
 * in the store. GetTask, ListTasks and CancelTask: a2a-tasks-read.
 */

/** What the Client adds to each call, for calls made on its transport. */
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

useA2ATasksApp();

const byData = (part: any) => (part.content?.$case === 'data' ? part.content.value : undefined);
const byText = (part: any) => (part.content?.$case === 'text' ? part.content.value : undefined);

describe('SendMessage starts a task', () => {
  it('returnImmediately: the task at once, working, committed before the answer', async () => {
    const task = await alice.sendMessage(startRequest('hold', { n: 1 }));
    expect(task).toMatchObject({ contextId: (task as any).id, history: [], artifacts: [] });
    const a2a = task as any;
    expect(a2a.status.state).toBe(TaskState.TASK_STATE_WORKING);
    expect(a2a.status.timestamp).toMatch(ISO);
    // The same task on another face, read at once: committed.
    const res = await restGet(a2a.id);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'working', lastUpdatedAt: a2a.status.timestamp });
    expect(a2a.metadata).toEqual({
      kind: 'hold',
      createdAt: res.body.createdAt,
      ttlMs: res.body.ttlMs,
      expiresAt: expect.stringMatching(ISO),
      pollIntervalMs: res.body.pollIntervalMs,
      progress: null,
      version: 1,
      'taskhandle/attempt': 0,
      'taskhandle/maxAttempts': 3,
      'taskhandle/priority': 0,
      'taskhandle/labels': {},
    });
  });

  it('the first data part is the input; none is {}; metadata.ttlMs is ttlMs', async () => {
    const task: any = await alice.sendMessage(startRequest('hold', undefined, { ttlMs: 60_000 }));
    expect(task.metadata.ttlMs).toBe(60_000);
    const graph = await t.gql(
      `query($id: ID!) { task(id: $id) { input } }`,
      { id: task.id },
      aliceToken,
    );
    expect(graph.data.task.input).toEqual({});
  });

  it('without returnImmediately, answers once the task is terminal, with the result artifact', async () => {
    const task: any = await alice.sendMessage(
      startRequest('sleep', { ms: 20, steps: 2 }, { returnImmediately: false }),
    );
    expect(task.status.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(task.artifacts).toHaveLength(1);
    expect(task.artifacts[0]).toMatchObject({ artifactId: 'result', name: 'result' });
    expect(task.artifacts[0].parts.map(byData)).toEqual([{ sleptMs: expect.any(Number) }]);
    expect(task.metadata.progress).toBe(1);
  });

  it('without returnImmediately, answers at TASK_STATE_INPUT_REQUIRED with the question', async () => {
    const task: any = await alice.sendMessage(
      startRequest('approval', { question: 'Ship it?' }, { returnImmediately: false }),
    );
    expect(task.status.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    const message = task.status.message;
    expect(message).toMatchObject({ role: Role.ROLE_AGENT, taskId: task.id, contextId: task.id });
    expect(message.parts.map(byText)[0]).toBe('Ship it?');
    expect(message.parts.map(byData)[1]).toEqual({
      key: 'decision',
      schema: expect.objectContaining({ required: ['approved'] }),
    });
    expect(task.artifacts).toEqual([]);
  });

  it('a failed task says why in its status message, as text and as { code, message }', async () => {
    const task: any = await alice.sendMessage(
      startRequest('sleep', { ms: 0, fail: 'out of paper' }, { returnImmediately: false }),
    );
    expect(task.status.state).toBe(TaskState.TASK_STATE_FAILED);
    expect(task.status.message.parts.map(byText)[0]).toBe('out of paper');
    expect(task.status.message.parts.map(byData)[1]).toEqual({
      code: 'HANDLER_ERROR',
      message: 'out of paper',
    });
    expect(task.artifacts).toEqual([]);
  });

  it("the handler's status message is a text part while working", async () => {
    const task: any = await alice.sendMessage(startRequest('halfway', {}));
    const got: any = await eventually(async () => {
      const seen: any = await alice.getTask({ tenant: '', id: task.id });
      return seen.status.message ? seen : undefined;
    });
    expect(got.status.state).toBe(TaskState.TASK_STATE_WORKING);
    expect(got.status.message).toMatchObject({ role: Role.ROLE_AGENT, taskId: task.id });
    expect(got.status.message.parts.map(byText)).toEqual(['halfway there']);
    expect(got.metadata.progress).toBe(0.5);
  });
});

describe('messageId is the idempotency key, in the one key space of Idempotency-Key', () => {
  it('the same message again returns the same task and creates nothing', async () => {
    const client = await fresh('idem1');
    const request = startRequest('hold', { n: 2 });
    const first: any = await client.sendMessage(request);
    const again: any = await client.sendMessage(request);
    expect(again.id).toBe(first.id);
    expect((await client.listTasks(list({ pageSize: 10 }))).totalSize).toBe(1);
  });

  it('the same messageId with another skill or input is -32602, nothing stored', async () => {
    const client = await fresh('idem2');
    const id = messageId();
    await client.sendMessage(startRequest('hold', { n: 1 }, { messageId: id }));
    for (const request of [
      startRequest('hold', { n: 2 }, { messageId: id }),
      startRequest('sleep', { ms: 0 }, { messageId: id }),
    ]) {
      expect(codeOf(await rejection(client.sendMessage(request)))).toBe(-32602);
    }
    expect((await client.listTasks(list({ pageSize: 10 }))).totalSize).toBe(1);
  });

  it('a REST Idempotency-Key and an A2A messageId name the same task', async () => {
    const token = await t.token('idem3');
    const key = messageId();
    const posted = await rest(t.url, 'POST', '/v1/jobs', {
      token,
      body: { kind: 'hold', input: { n: 3 } },
      headers: { 'idempotency-key': key },
    });
    const client = await a2aClient(t.url, token);
    const task: any = await client.sendMessage(startRequest('hold', { n: 3 }, { messageId: key }));
    expect(task.id).toBe(posted.body.taskId);
  });

  it("keys are the principal's: another principal with the same messageId gets its own task", async () => {
    const request = startRequest('hold', { n: 4 });
    const mine: any = await alice.sendMessage(request);
    const theirs: any = await bob.sendMessage(request);
    expect(theirs.id).not.toBe(mine.id);
  });
});

describe('bad input is -32602 and stores nothing', () => {
  const cases: Array<[string, () => ReturnType<typeof startRequest>]> = [
    [
      'a skill that is not a name',
      () => {
        const request = startRequest('hold', { n: 1 });
        request.message!.metadata = { skill: 7 };
        return request;
      },
    ],
    ['an unknown skill', () => startRequest('nope', { n: 1 })],
    ['input failing the schema', () => startRequest('hold', { n: 'one' })],
    ['a client-chosen contextId', () => startRequest('hold', { n: 1 }, { contextId: 'ctx-1' })],
    ['a ttlMs that is not an integer', () => startRequest('hold', {}, { ttlMs: 1.5 })],
  ];
  for (const [what, request] of cases) {
    it(what, async () => {
      const client = await fresh(`bad-${what.replace(/\W/g, '')}`);
      const err = await rejection(client.sendMessage(request()));
      expect(codeOf(err), err.message).toBe(-32602);
      expect((await client.listTasks(list({ pageSize: 10 }))).totalSize).toBe(0);
    });
  }
});

describe('answering a question: SendMessage with message.taskId', () => {
  async function asking(client = alice): Promise<string> {
    const task: any = await client.sendMessage(
      startRequest('approval', { question: 'Deploy?' }, { returnImmediately: false }),
    );
    expect(task.status.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    return task.id;
  }

  it('answers the pending input request; the answer is the task, and the task completes', async () => {
    const id = await asking();
    const answered: any = await alice.sendMessage(answerRequest(id, { approved: true }));
    expect(answered).toMatchObject({ id, status: { state: TaskState.TASK_STATE_WORKING } });
    const done: any = await eventually(async () => {
      const task: any = await alice.getTask({ tenant: '', id });
      return task.status.state === TaskState.TASK_STATE_COMPLETED ? task : undefined;
    });
    expect(done.artifacts[0].parts.map(byData)).toEqual([{ approved: true, comment: null }]);
  });

  it('without returnImmediately, the answer comes once the task is terminal', async () => {
    const id = await asking();
    const done: any = await alice.sendMessage(
      answerRequest(
        id,
        { approved: false, comment: 'no' },
        { returnImmediately: false, contextId: id },
      ),
    );
    expect(done.status.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(done.artifacts[0].parts.map(byData)).toEqual([{ approved: false, comment: 'no' }]);
  });

  it("a value failing the question's schema is -32602 and the question stays", async () => {
    const id = await asking();
    const err = await rejection(alice.sendMessage(answerRequest(id, { approved: 'yes' })));
    expect(codeOf(err)).toBe(-32602);
    expect(codeOf(await rejection(alice.sendMessage(answerRequest(id, undefined))))).toBe(-32602);
    const task: any = await alice.getTask({ tenant: '', id });
    expect(task.status.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
  });

  it('a contextId other than the task id is -32602', async () => {
    const id = await asking();
    const err = await rejection(
      alice.sendMessage(answerRequest(id, { approved: true }, { contextId: UNKNOWN_ID })),
    );
    expect(codeOf(err)).toBe(-32602);
  });

  it('a task that waits for no input, or is terminal: UnsupportedOperationError -32004', async () => {
    const working: any = await alice.sendMessage(startRequest('hold', { n: 5 }));
    const err = await rejection(alice.sendMessage(answerRequest(working.id, { approved: true })));
    expect(codeOf(err)).toBe(-32004);
    await alice.cancelTask({ tenant: '', id: working.id, metadata: undefined });
    const again = await rejection(alice.sendMessage(answerRequest(working.id, { approved: true })));
    expect(codeOf(again)).toBe(-32004);
  });

  it("someone else's, an unknown or a malformed task id: TaskNotFoundError, alike", async () => {
    const id = await asking();
    const errors = await Promise.all([
      rejection(bob.sendMessage(answerRequest(id, { approved: true }))),
      rejection(bob.sendMessage(answerRequest(UNKNOWN_ID, { approved: true }))),
      rejection(bob.sendMessage(answerRequest('not-a-uuid', { approved: true }))),
    ]);
    for (const err of errors) {
      expect(codeOf(err)).toBe(-32001);
      expect(err.message).toBe(errors[0].message);
    }
    const task: any = await alice.getTask({ tenant: '', id });
    expect(task.status.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
  });
});
