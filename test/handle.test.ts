import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { collect, startTestApp, TASK_FIELDS, type TestApp } from './helpers/app.js';

let t: TestApp;
let alice: string;
beforeAll(async () => {
  t = await startTestApp();
  alice = await t.token('alice');
});
afterAll(() => t?.stop());

const START = `mutation($input: StartTaskInput!) { startTask(input: $input) { ${TASK_FIELDS} } }`;
const GET = `query($id: ID!) { task(id: $id) { ${TASK_FIELDS} } }`;
const FOLLOW = `subscription($id: ID!) { taskUpdated(id: $id) { id status version progress result } }`;

describe('the task handle', () => {
  it('is readable the moment startTask returns it', async () => {
    const started = await t.gql(START, { input: { kind: 'sleep', input: { ms: 60_000 } } }, alice);
    expect(started.errors).toBeUndefined();
    const handle = started.data.startTask;
    expect(handle).toMatchObject({ kind: 'sleep', status: 'WORKING', version: 1, ttlMs: 3_600_000, pollIntervalMs: 1000 });
    expect(Date.parse(handle.expiresAt) - Date.parse(handle.createdAt)).toBe(3_600_000);
    const read = await t.gql(GET, { id: handle.id }, alice);
    expect(read.data.task.id).toBe(handle.id);
    expect(read.data.task.input).toEqual({ ms: 60_000 });
  });

  it('streams the current state first, then increasing versions, and completes after COMPLETED', async () => {
    const started = await t.gql(START, { input: { kind: 'sleep', input: { ms: 200, steps: 4 } } }, alice);
    const id = started.data.startTask.id;
    const { events, error } = await collect(t.ws(alice), FOLLOW, { id });
    expect(error).toBeUndefined();
    const versions = events.map((e) => e.taskUpdated.version);
    expect(versions).toEqual([...versions].sort((a, b) => a - b));
    expect(new Set(versions).size).toBe(versions.length);
    expect(events.at(-1).taskUpdated).toMatchObject({ status: 'COMPLETED', progress: 1 });
    expect(events.at(-1).taskUpdated.result.sleptMs).toBeGreaterThanOrEqual(200);
  });
});
