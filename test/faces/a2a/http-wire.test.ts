import { describe, expect, it } from 'vitest';
import {
  a2aClient,
  codeOf,
  getTaskCall,
  postA2A,
  rejection,
  startRequest,
  startRequestJson,
  UNKNOWN_ID,
} from '../../helpers/a2a.js';
import { capturingLog, startTestApp } from '../../helpers/app.js';
import { alice, t, useFileApp } from '../../helpers/file-app.js';
import { rest } from '../../helpers/rest.js';
import { expectProblem } from '../../helpers/rest-jobs.js';
import { gate, racer } from '../../helpers/runner-kinds.js';

/**
 * The A2A face at the HTTP level (DESIGN §10), below JSON-RPC: the bodies `POST /a2a` takes
 * and refuses, what goes over the wire, and faults. The SDK client cannot send these
 * requests, so they are written by hand; everything else goes through the SDK.
 */

const { log, lines } = capturingLog();

useFileApp({ log, kinds: [racer] });

/** A JSON-RPC request by hand (postA2A) to the file's app. */
const rpc = (token: string | null, body: unknown, headers?: Record<string, string>) =>
  postA2A(t.url, token, body, headers);

describe('bodies', () => {
  it('415 for a body that is not JSON by its type', async () => {
    const res = await rpc(alice, JSON.stringify(getTaskCall(UNKNOWN_ID)), {
      'a2a-version': '1.0',
      'content-type': 'text/plain',
    });
    expectProblem(res, 415, 'UNSUPPORTED_MEDIA_TYPE');
  });

  it('413 for a body over 1 MiB, and the connection closed', async () => {
    const body = JSON.stringify({ ...getTaskCall(UNKNOWN_ID), pad: 'x'.repeat(1024 * 1024) });
    const res = await rpc(alice, body);
    expectProblem(res, 413, 'PAYLOAD_TOO_LARGE');
    expect(res.headers.get('connection')).toBe('close');
  });

  it('-32700 for JSON that does not parse, -32600 for a batch', async () => {
    expect((await rpc(alice, '{"jsonrpc":')).body.error.code).toBe(-32700);
    expect((await rpc(alice, [getTaskCall(UNKNOWN_ID)])).body.error.code).toBe(-32600);
  });

  it('-32601 for a method A2A does not have', async () => {
    const res = await rpc(alice, { jsonrpc: '2.0', id: 3, method: 'tasks/get', params: {} });
    expect(res.body).toMatchObject({ id: 3, error: { code: -32601 } });
  });

  it("-32602, never the decoder's own words, for params the SDK cannot decode", async () => {
    const params = startRequestJson();
    (params.message.parts[0] as any) = { text: { toString: 1 } };
    const res = await rpc(alice, { jsonrpc: '2.0', id: 4, method: 'SendMessage', params });
    expect(res.body).toMatchObject({ id: 4, error: { code: -32602 } });
    expect(res.text).not.toMatch(/primitive|TypeError/);
  });

  it('405 for another verb on /a2a', async () => {
    const res = await rest(t.url, 'GET', '/a2a', { token: alice });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('POST');
  });
});

describe('the wire', () => {
  it('a task is proto JSON with its empty lists written out; states are proto names', async () => {
    const started = await rpc(alice, {
      jsonrpc: '2.0',
      id: 'a',
      method: 'SendMessage',
      params: startRequestJson(),
    });
    const task = started.body.result.task;
    expect(task).toMatchObject({
      contextId: task.id,
      status: { state: 'TASK_STATE_WORKING' },
      artifacts: [],
      history: [],
    });
    const got = await rpc(alice, {
      jsonrpc: '2.0',
      id: 'b',
      method: 'GetTask',
      params: { id: task.id },
    });
    expect(got.body).toMatchObject({
      jsonrpc: '2.0',
      id: 'b',
      result: { id: task.id, history: [] },
    });
  });

  it('a stream is SSE, each data line one JSON-RPC response carrying a StreamResponse', async () => {
    // A task that ends only once the stream has shown it, whatever the machine's speed (a
    // task already over when the stream starts is the stream's only event, DESIGN §10).
    const start = startRequestJson();
    const params = {
      ...start,
      message: { ...start.message, parts: [{ data: {} }], metadata: { skill: 'racer' } },
    };
    const res = await fetch(`${t.url}/a2a`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${alice}`,
        'content-type': 'application/json',
        'a2a-version': '1.0',
        accept: 'text/event-stream',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'SendStreamingMessage', params }),
    });
    expect(res.headers.get('content-type')).toBe('text/event-stream');
    const events: any[] = [];
    let text = '';
    const decoder = new TextDecoder();
    const reader = res.body!.getReader();
    for (let read = await reader.read(); !read.done; read = await reader.read()) {
      text += decoder.decode(read.value, { stream: true });
      const lines = text.split('\n');
      text = lines.pop()!;
      for (const line of lines) {
        if (!line.startsWith('data: ')) continue;
        const event = JSON.parse(line.slice(6));
        if (events.length === 0) gate(event.result.task.id).release();
        events.push(event);
      }
    }
    expect(events[0]).toMatchObject({ jsonrpc: '2.0', id: 9, result: { task: { history: [] } } });
    expect(events.at(-1)).toMatchObject({
      id: 9,
      result: { statusUpdate: { status: { state: 'TASK_STATE_COMPLETED' } } },
    });
  });
});

describe('faults', () => {
  it('an unexpected failure is -32603, masked for the client and logged with its cause', async () => {
    const broken = await startTestApp({ log });
    try {
      const client = await a2aClient(broken.url, await broken.token('alice'));
      await broken.app.db.close(); // the database goes away under the face
      const err = await rejection(client.sendMessage(startRequest('sleep', { ms: 0 })));
      expect(codeOf(err)).toBe(-32603);
      expect(err.message).toBe('Internal error.');
      const logged = lines.find((l) => l.msg === 'unexpected error in the A2A face');
      expect(logged?.err?.message).toBeTruthy();
      expect(err.message).not.toContain(logged?.err?.message);
    } finally {
      await broken.stop();
    }
  });
});
