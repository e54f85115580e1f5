import { type StreamResponse, TaskState } from '@a2a-js/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { a2aClient, answerRequest, drain, startRequest } from '../../helpers/a2a.js';
import { type Cluster, spawnCluster } from '../../helpers/cluster.js';
import { backend } from '../../helpers/db.js';
import type { ServerProcess } from '../../helpers/process.js';

/**
 * A2A across processes, started as users start them, on one Postgres: an api process (which
 * runs nothing) takes the messages and serves the streams; a worker process runs the tasks.
 * Every event a stream sends reached the api process through LISTEN/NOTIFY. Postgres only.
 */

let cluster: Cluster<[ServerProcess, ServerProcess]>;
let api: ServerProcess;
let alice: string;

const stateOf = (event: StreamResponse) => {
  const payload = event.payload!;
  if (payload.$case === 'task' || payload.$case === 'statusUpdate')
    return payload.value.status?.state;
  return undefined;
};

describe.skipIf(backend === 'pglite')('A2A on an api process, tasks run by a worker', () => {
  beforeAll(async () => {
    cluster = await spawnCluster(['api', 'worker']);
    [api] = cluster.servers;
    alice = await cluster.token('alice');
  });

  afterAll(() => cluster?.stop());

  it('a SendStreamingMessage stream follows the worker to TASK_STATE_COMPLETED', async () => {
    const client = await a2aClient(api.url, alice);
    const events = await drain(
      client.sendMessageStream(startRequest('sleep', { ms: 300, steps: 3 })),
    );
    expect(events[0]!.payload?.$case).toBe('task');
    expect(events.at(-2)!.payload?.$case).toBe('artifactUpdate');
    expect(stateOf(events.at(-1)!)).toBe(TaskState.TASK_STATE_COMPLETED);
    const versions = events
      .filter((e) => e.payload?.$case !== 'artifactUpdate')
      .map((e) => (e.payload!.value as any).metadata.version as number);
    for (let i = 1; i < versions.length; i++) expect(versions[i]).toBeGreaterThan(versions[i - 1]!);
    // Progress updates in between came from the worker, through NOTIFY.
    expect(versions.length).toBeGreaterThanOrEqual(3);
  });

  it('a SubscribeToTask stream waits through the question and ends with the answer', async () => {
    const client = await a2aClient(api.url, alice);
    const started: any = await client.sendMessage(startRequest('approval', { question: 'Far?' }));
    const events: StreamResponse[] = [];
    for await (const event of client.resubscribeTask({ tenant: '', id: started.id })) {
      events.push(event);
      if (stateOf(event) === TaskState.TASK_STATE_INPUT_REQUIRED) {
        await client.sendMessage(answerRequest(started.id, { approved: true }));
      }
    }
    const states = events.map(stateOf).filter((s) => s !== undefined);
    expect(states).toContain(TaskState.TASK_STATE_INPUT_REQUIRED);
    expect(states.at(-1)).toBe(TaskState.TASK_STATE_COMPLETED);
    const artifact = events.find((e) => e.payload?.$case === 'artifactUpdate')!;
    expect((artifact.payload!.value as any).artifact.parts[0].content.value).toEqual({
      approved: true,
      comment: null,
    });
  });

  it('a blocking SendMessage on the api process answers once the worker is done', async () => {
    const client = await a2aClient(api.url, alice);
    const task: any = await client.sendMessage(
      startRequest('sleep', { ms: 100 }, { returnImmediately: false }),
    );
    expect(task.status.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(task.artifacts[0].parts[0].content.value).toEqual({ sleptMs: expect.any(Number) });
  });
});
