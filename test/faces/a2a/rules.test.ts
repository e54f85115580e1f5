import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UNKNOWN_ID } from '../../helpers/a2a.js';
import { startTestApp, type TestApp } from '../../helpers/app.js';
import { rest } from '../../helpers/rest.js';

/**
 * Rules of A2A 1.0 held over raw JSON-RPC, as the official conformance kit sends it: version
 * negotiation on major.minor, unsupported media types, ListTasks without artifacts, push
 * config lookups and deletes, and the endpoint with a trailing slash.
 */

let t: TestApp;
let alice: string;
beforeAll(async () => {
  t = await startTestApp({ env: { WEBHOOK_ALLOW_PRIVATE: 'true' } });
  alice = await t.token(`alice-${Date.now()}`);
});
afterAll(() => t?.stop());

let ids = 0;
async function rpc(
  method: string,
  params: unknown,
  options: { version?: string; path?: string; token?: string } = {},
) {
  const res = await rest(t.url, 'POST', options.path ?? '/a2a', {
    token: options.token ?? alice,
    body: { jsonrpc: '2.0', id: ++ids, method, params },
    headers: { 'a2a-version': options.version ?? '1.0' },
  });
  expect(res.status, res.text).toBe(200);
  return res.body as { result?: any; error?: { code: number; message: string } };
}

let messages = 0;
const message = (parts: unknown[], skill = 'sleep') => ({
  message: {
    messageId: `rules-${Date.now()}-${++messages}`,
    role: 'ROLE_USER',
    parts,
    metadata: { skill },
  },
  configuration: { returnImmediately: true },
});

/** Starts a task that keeps working for a minute (push configs need a live task). */
async function longTask(): Promise<string> {
  const { result, error } = await rpc('SendMessage', message([{ data: { ms: 60_000 } }]));
  expect(error).toBeUndefined();
  return result.task.id;
}

describe('A2A-Version', () => {
  for (const version of ['1.0', '1.0.0', '1.0.1', '1.0.17']) {
    it(`${version} is served (versions match on major.minor)`, async () => {
      const { error } = await rpc('GetTask', { id: UNKNOWN_ID }, { version });
      expect(error?.code).toBe(-32001);
    });
  }
  for (const version of ['0.3', '1.1', '2.0', '1', '1.0.x', 'one']) {
    it(`${version} is VersionNotSupportedError`, async () => {
      const { error } = await rpc('GetTask', { id: UNKNOWN_ID }, { version });
      expect(error?.code).toBe(-32009);
    });
  }
});

describe('message parts', () => {
  for (const part of [
    { data: { ms: 0 }, mediaType: 'application/x-unsupported-tck-type' },
    { text: 'hello', mediaType: 'application/x-unsupported-tck-type' },
    { data: { ms: 0 }, mediaType: 'text/csv' },
  ]) {
    it(`a part of type ${part.mediaType} is ContentTypeNotSupportedError, and nothing is stored`, async () => {
      const who = await t.token(`media-${++messages}`);
      const { error } = await rpc('SendMessage', message([part]), { token: who });
      expect(error?.code).toBe(-32005);
      const listed = await rpc('ListTasks', {}, { token: who });
      expect(listed.result.totalSize).toBe(0);
    });
  }

  it('a part declared application/json is taken', async () => {
    const { result, error } = await rpc(
      'SendMessage',
      message([{ data: { ms: 0 }, mediaType: 'application/json; charset=utf-8' }]),
    );
    expect(error).toBeUndefined();
    expect(result.task.id).toMatch(/^[0-9a-f-]{36}$/);
  });
});

describe('ListTasks', () => {
  it('leaves artifacts out without includeArtifacts, and lists them with it', async () => {
    const who = await t.token(`list-${++messages}`);
    const done = await rpc(
      'SendMessage',
      { ...message([{ data: { ms: 0 } }]), configuration: { returnImmediately: false } },
      { token: who },
    );
    expect(done.result.task.status.state).toBe('TASK_STATE_COMPLETED');
    const plain = await rpc('ListTasks', {}, { token: who });
    expect(plain.result.tasks).toHaveLength(1);
    expect(plain.result.tasks[0]).not.toHaveProperty('artifacts');
    const full = await rpc('ListTasks', { includeArtifacts: true }, { token: who });
    expect(full.result.tasks[0].artifacts).toEqual([
      expect.objectContaining({ artifactId: 'result' }),
    ]);
  });
});

describe('push notification configs', () => {
  it('GetTaskPushNotificationConfig for a config the task does not have is TaskNotFoundError', async () => {
    const taskId = await longTask();
    const { error } = await rpc('GetTaskPushNotificationConfig', { taskId, id: UNKNOWN_ID });
    expect(error?.code).toBe(-32001);
  });

  it('deleting a config twice succeeds twice', async () => {
    const taskId = await longTask();
    const created = await rpc('CreateTaskPushNotificationConfig', {
      taskId,
      url: 'http://127.0.0.1:9/hook',
    });
    expect(created.error).toBeUndefined();
    const id = created.result.id;
    for (let i = 0; i < 2; i++) {
      const deleted = await rpc('DeleteTaskPushNotificationConfig', { taskId, id });
      expect(deleted.error, `delete #${i + 1}`).toBeUndefined();
    }
    const listed = await rpc('ListTaskPushNotificationConfigs', { taskId });
    expect(listed.result.configs ?? []).toEqual([]);
    // A task that is not the caller's (or does not exist) is still TaskNotFoundError.
    const unknown = await rpc('DeleteTaskPushNotificationConfig', { taskId: UNKNOWN_ID, id });
    expect(unknown.error?.code).toBe(-32001);
  });
});

it('POST /a2a/ (with a trailing slash) is the same endpoint', async () => {
  const { error } = await rpc('GetTask', { id: UNKNOWN_ID }, { path: '/a2a/' });
  expect(error?.code).toBe(-32001);
});
