import { type StreamResponse, TaskState } from '@a2a-js/sdk';
import type { Client } from '@a2a-js/sdk/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  a2aClient,
  answerRequest,
  codeOf,
  drain,
  list,
  rejection,
  startRequest,
  UNKNOWN_ID,
} from '../../helpers/a2a.js';
import { eventually, startTestApp, type TestApp } from '../../helpers/app.js';
import { hold } from '../../helpers/kinds.js';

/**
 * A2A streams (DESIGN §10) through the SDK's client: SendStreamingMessage and SubscribeToTask
 * send the task, then a statusUpdate per change in version order, the result artifact just
 * before the completed status, and end after the terminal state; they stay open while the
 * task waits for input. Events come from the task's event stream, never from polling.
 */

let t: TestApp;
let alice: Client;
let bob: Client;
beforeAll(async () => {
  t = await startTestApp({ kinds: [hold] });
  alice = await a2aClient(t.url, await t.token('alice'));
  bob = await a2aClient(t.url, await t.token('bob'));
});
afterAll(() => t?.stop());

/** The state and version an event reports (the task's, or its update's). */
function stateOf(event: StreamResponse): { state: TaskState | undefined; version: number } {
  const payload = event.payload!;
  if (payload.$case === 'task')
    return { state: payload.value.status?.state, version: payload.value.metadata?.version };
  if (payload.$case === 'statusUpdate')
    return { state: payload.value.status?.state, version: payload.value.metadata?.version };
  return { state: undefined, version: Number.NaN };
}

const cases = (events: StreamResponse[]) => events.map((event) => event.payload?.$case);

/** Checks the §10 shape of a whole stream; returns the states it went through. */
function expectWellFormed(events: StreamResponse[], taskId: string): TaskState[] {
  expect(events[0]!.payload?.$case).toBe('task');
  expect(
    cases(events)
      .slice(1)
      .every((c) => c === 'statusUpdate' || c === 'artifactUpdate'),
  ).toBe(true);
  const versions = events
    .filter((e) => e.payload?.$case !== 'artifactUpdate')
    .map((e) => stateOf(e).version);
  for (let i = 1; i < versions.length; i++) expect(versions[i]).toBeGreaterThan(versions[i - 1]!);
  for (const event of events) {
    const value = event.payload!.value as any;
    expect(value.taskId ?? value.id).toBe(taskId);
    expect(value.contextId).toBe(taskId);
    if (event.payload!.$case === 'statusUpdate') {
      expect(Object.keys(value.metadata).sort()).toEqual([
        'progress',
        'taskhandle/attempt',
        'taskhandle/maxAttempts',
        'taskhandle/priority',
        'version',
      ]);
    }
  }
  return events.filter((e) => e.payload?.$case !== 'artifactUpdate').map((e) => stateOf(e).state!);
}

describe('SendStreamingMessage', () => {
  it('the task, each change in version order, the artifact before COMPLETED, then the end', async () => {
    const events = await drain(
      alice.sendMessageStream(startRequest('sleep', { ms: 150, steps: 3 })),
    );
    const task = (events[0]!.payload as any).value;
    const states = expectWellFormed(events, task.id);
    expect(states[0]).toBe(TaskState.TASK_STATE_WORKING);
    expect(states.at(-1)).toBe(TaskState.TASK_STATE_COMPLETED);
    const last = events.length - 1;
    expect(cases(events)[last - 1]).toBe('artifactUpdate');
    const artifact = (events[last - 1]!.payload as any).value;
    expect(artifact).toMatchObject({
      lastChunk: true,
      artifact: { artifactId: 'result', name: 'result' },
    });
    expect(artifact.artifact.parts[0].content.value).toEqual({ sleptMs: expect.any(Number) });
    expect(cases(events).filter((c) => c === 'artifactUpdate')).toHaveLength(1);
    // The last update carries the final progress.
    expect((events[last]!.payload as any).value.metadata.progress).toBe(1);
  });

  it('stays open through TASK_STATE_INPUT_REQUIRED and follows the answer to the end', async () => {
    const stream = alice.sendMessageStream(startRequest('approval', { question: 'Go?' }));
    const events: StreamResponse[] = [];
    let taskId = '';
    for await (const event of stream) {
      events.push(event);
      if (event.payload?.$case === 'task') taskId = event.payload.value.id;
      if (stateOf(event).state === TaskState.TASK_STATE_INPUT_REQUIRED) {
        const question = (event.payload!.value as any).status.message.parts;
        expect(question[1].content.value.key).toBe('decision');
        await alice.sendMessage(answerRequest(taskId, { approved: true }));
      }
    }
    const states = expectWellFormed(events, taskId);
    const asked = states.indexOf(TaskState.TASK_STATE_INPUT_REQUIRED);
    expect(asked).toBeGreaterThanOrEqual(0);
    expect(states.slice(asked + 1)).toEqual([
      TaskState.TASK_STATE_WORKING,
      TaskState.TASK_STATE_COMPLETED,
    ]);
    expect(cases(events).at(-2)).toBe('artifactUpdate');
  });

  it('a failing task ends with TASK_STATE_FAILED and why, no artifact', async () => {
    const events = await drain(
      alice.sendMessageStream(startRequest('sleep', { ms: 0, fail: 'jam' })),
    );
    const last = events.at(-1)!.payload!.value as any;
    expect(last.status.state).toBe(TaskState.TASK_STATE_FAILED);
    expect(last.status.message.parts[0].content.value).toBe('jam');
    expect(cases(events)).not.toContain('artifactUpdate');
  });

  it('bad input is refused before the stream begins, and nothing is stored', async () => {
    const client = await a2aClient(t.url, await t.token('streamer-bad'));
    const err = await rejection(drain(client.sendMessageStream(startRequest('nope', {}))));
    expect(codeOf(err)).toBe(-32602);
    expect((await client.listTasks(list())).totalSize).toBe(0);
  });
});

describe('SubscribeToTask', () => {
  it('the task first, then its changes; ends after TASK_STATE_CANCELED', async () => {
    const started: any = await alice.sendMessage(startRequest('hold', {}));
    const stream = alice.resubscribeTask({ tenant: '', id: started.id });
    const events: StreamResponse[] = [];
    for await (const event of stream) {
      events.push(event);
      if (events.length === 1)
        await alice.cancelTask({ tenant: '', id: started.id, metadata: undefined });
    }
    expect(expectWellFormed(events, started.id)).toEqual([
      TaskState.TASK_STATE_WORKING,
      TaskState.TASK_STATE_CANCELED,
    ]);
  });

  it('on a terminal task: UnsupportedOperationError -32004', async () => {
    const done: any = await alice.sendMessage(
      startRequest('sleep', { ms: 0 }, { returnImmediately: false }),
    );
    const err = await rejection(drain(alice.resubscribeTask({ tenant: '', id: done.id })));
    expect(codeOf(err)).toBe(-32004);
  });

  it("an unknown, someone else's or a malformed id: TaskNotFoundError -32001, alike", async () => {
    const mine: any = await alice.sendMessage(startRequest('hold', {}));
    const errors = await Promise.all(
      [mine.id, UNKNOWN_ID, 'not-a-uuid'].map((id) =>
        rejection(drain(bob.resubscribeTask({ tenant: '', id }))),
      ),
    );
    for (const err of errors) {
      expect(codeOf(err)).toBe(-32001);
      expect(err.message).toBe(errors[0].message);
    }
  });

  it('a client that goes away releases its subscription', async () => {
    // An api process runs nothing, so only subscribers watch its tasks.
    const api = await startTestApp({ env: { ROLE: 'api' } });
    try {
      const client = await a2aClient(api.url, await api.token('alice'));
      const started: any = await client.sendMessage(startRequest('sleep', { ms: 1000 }));
      const abort = new AbortController();
      const stream = client.resubscribeTask(
        { tenant: '', id: started.id },
        { signal: abort.signal },
      );
      const first = await stream.next();
      expect(first.value?.payload?.$case).toBe('task');
      expect(api.app.events.watchedCount).toBe(1);
      abort.abort();
      await rejection(stream.next());
      await eventually(async () => (api.app.events.watchedCount === 0 ? true : undefined));
    } finally {
      await api.stop();
    }
  });
});
