import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../../helpers/app.js';
import { rest } from '../../helpers/rest.js';

/**
 * Every request field read under its proto name (`include_artifacts`, `message_id`…) as under
 * its JSON name: ProtoJSON parsers accept both, and the official A2A kit's client sends the
 * proto names. Raw JSON-RPC, since the SDK client writes the JSON names only.
 */

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ env: { WEBHOOK_ALLOW_PRIVATE: 'true' } });
});
afterAll(() => t?.stop());

let n = 0;
async function rpc(token: string, method: string, params: unknown) {
  const res = await rest(t.url, 'POST', '/a2a', {
    token,
    body: { jsonrpc: '2.0', id: ++n, method, params },
    headers: { 'a2a-version': '1.0' },
  });
  expect(res.status, res.text).toBe(200);
  return res.body as { result?: any; error?: { code: number; message: string } };
}

const who = () => t.token(`names-${Date.now()}-${++n}`);

/** Starts a task with the proto names only; `wait` leaves out return_immediately. */
async function start(token: string, input: unknown, skill = 'sleep', wait = false) {
  const { result, error } = await rpc(token, 'SendMessage', {
    message: {
      message_id: `names-${++n}`,
      role: 'ROLE_USER',
      parts: [{ data: input, media_type: 'application/json' }],
      metadata: { skill },
    },
    configuration: { return_immediately: !wait },
  });
  expect(error).toBeUndefined();
  return result.task;
}

describe('SendMessage', () => {
  it('message_id is the idempotency key and return_immediately answers at once', async () => {
    const token = await who();
    const params = {
      message: {
        message_id: `names-idem-${++n}`,
        role: 'ROLE_USER',
        parts: [{ data: { ms: 60_000 } }],
        metadata: { skill: 'sleep' },
      },
      configuration: { return_immediately: true },
    };
    const first = await rpc(token, 'SendMessage', params);
    expect(first.result.task.status.state).toBe('TASK_STATE_WORKING');
    const again = await rpc(token, 'SendMessage', params);
    expect(again.result.task.id).toBe(first.result.task.id);
  });

  it('media_type is checked like mediaType', async () => {
    const token = await who();
    const { error } = await rpc(token, 'SendMessage', {
      message: {
        message_id: `names-${++n}`,
        role: 'ROLE_USER',
        parts: [{ data: { ms: 0 }, media_type: 'text/csv' }],
        metadata: { skill: 'sleep' },
      },
    });
    expect(error?.code).toBe(-32005);
  });

  it('task_id and context_id answer a question', async () => {
    const token = await who();
    const asked = await start(token, { question: 'Ship?' }, 'approval', true);
    expect(asked.status.state).toBe('TASK_STATE_INPUT_REQUIRED');
    const mismatched = await rpc(token, 'SendMessage', {
      message: {
        message_id: `names-${++n}`,
        role: 'ROLE_USER',
        task_id: asked.id,
        context_id: 'another-context',
        parts: [{ data: { approved: true } }],
      },
    });
    expect(mismatched.error?.code).toBe(-32602);
    const answered = await rpc(token, 'SendMessage', {
      message: {
        message_id: `names-${++n}`,
        role: 'ROLE_USER',
        task_id: asked.id,
        context_id: asked.id,
        parts: [{ data: { approved: true } }],
      },
    });
    expect(answered.result.task.status.state).toBe('TASK_STATE_COMPLETED');
  });

  it('task_push_notification_config attaches a config', async () => {
    const token = await who();
    const { result } = await rpc(token, 'SendMessage', {
      message: {
        message_id: `names-${++n}`,
        role: 'ROLE_USER',
        parts: [{ data: { ms: 60_000 } }],
        metadata: { skill: 'sleep' },
      },
      configuration: {
        return_immediately: true,
        task_push_notification_config: { url: 'http://127.0.0.1:9/hook', token: 'tok' },
      },
    });
    const listed = await rpc(token, 'ListTaskPushNotificationConfigs', { task_id: result.task.id });
    expect(listed.result.configs).toEqual([expect.objectContaining({ token: 'tok' })]);
  });
});

describe('SendStreamingMessage', () => {
  it('takes the proto names, and message_id keeps its task across the stream and a retry', async () => {
    const token = await who();
    const params = {
      message: {
        message_id: `names-stream-${++n}`,
        role: 'ROLE_USER',
        parts: [{ data: { ms: 0 }, media_type: 'application/json' }],
        metadata: { skill: 'sleep' },
        reference_task_ids: [],
      },
      configuration: { accepted_output_modes: ['application/json'], history_length: 0 },
    };
    const stream = async () => {
      const res = await fetch(`${t.url}/a2a`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'a2a-version': '1.0',
          authorization: `Bearer ${token}`,
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: ++n, method: 'SendStreamingMessage', params }),
      });
      expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
      // The stream ends after the terminal state.
      return (await res.text())
        .split('\n')
        .filter((line) => line.startsWith('data: '))
        .map((line) => JSON.parse(line.slice(6)).result);
    };
    const events = await stream();
    const { id } = events[0].task;
    expect(events.at(-1).statusUpdate).toMatchObject({
      taskId: id,
      status: { state: 'TASK_STATE_COMPLETED' },
    });
    const again = await stream();
    expect(again[0].task.id).toBe(id);
  });
});

describe('ListTasks', () => {
  it('include_artifacts lists the artifacts', async () => {
    const token = await who();
    await start(token, { ms: 0 }, 'sleep', true);
    const { result } = await rpc(token, 'ListTasks', { include_artifacts: true });
    expect(result.tasks[0].artifacts).toEqual([expect.objectContaining({ artifactId: 'result' })]);
    const without = await rpc(token, 'ListTasks', { include_artifacts: false });
    expect(without.result.tasks[0]).not.toHaveProperty('artifacts');
  });

  it('page_size, page_token, context_id and status_timestamp_after', async () => {
    const token = await who();
    const older = await start(token, { ms: 0 }, 'sleep', true);
    const newer = await start(token, { ms: 0 }, 'sleep', true);
    const first = await rpc(token, 'ListTasks', { page_size: 1 });
    expect(first.result).toMatchObject({ pageSize: 1, totalSize: 2, tasks: [{ id: newer.id }] });
    const second = await rpc(token, 'ListTasks', {
      page_size: 1,
      page_token: first.result.nextPageToken,
    });
    expect(second.result.tasks.map((task: any) => task.id)).toEqual([older.id]);
    const one = await rpc(token, 'ListTasks', { context_id: older.id });
    expect(one.result.tasks.map((task: any) => task.id)).toEqual([older.id]);
    const later = await rpc(token, 'ListTasks', {
      status_timestamp_after: new Date(Date.now() + 60_000).toISOString(),
    });
    expect(later.result.totalSize).toBe(0);
  });
});

describe('GetTask and push configs', () => {
  it('history_length is taken', async () => {
    const token = await who();
    const task = await start(token, { ms: 0 });
    const { result, error } = await rpc(token, 'GetTask', { id: task.id, history_length: 0 });
    expect(error).toBeUndefined();
    expect(result.id).toBe(task.id);
  });

  it('task_id names the task of every config method', async () => {
    const token = await who();
    const task = await start(token, { ms: 60_000 });
    const created = await rpc(token, 'CreateTaskPushNotificationConfig', {
      task_id: task.id,
      url: 'http://127.0.0.1:9/hook',
    });
    expect(created.result.taskId).toBe(task.id);
    const { id } = created.result;
    const got = await rpc(token, 'GetTaskPushNotificationConfig', { task_id: task.id, id });
    expect(got.result.id).toBe(id);
    const listed = await rpc(token, 'ListTaskPushNotificationConfigs', {
      task_id: task.id,
      page_size: 10,
    });
    expect(listed.result.configs.map((c: any) => c.id)).toEqual([id]);
    await rpc(token, 'DeleteTaskPushNotificationConfig', { task_id: task.id, id });
    const gone = await rpc(token, 'ListTaskPushNotificationConfigs', { task_id: task.id });
    expect(gone.result.configs ?? []).toEqual([]);
  });
});
