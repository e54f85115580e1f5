import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  CallToolResultSchema,
  CancelTaskResultSchema,
  GetTaskPayloadResultSchema,
  GetTaskResultSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_SCOPES, startTestApp, type TestApp } from '../../helpers/app.js';
import {
  connectMcp,
  INITIALIZE,
  type McpClient,
  rawMcp,
  rawSession,
  rpcError,
  wireMessage,
} from '../../helpers/mcp.js';
import { UNKNOWN_ID } from '../../helpers/rest-jobs.js';

let t: TestApp;
let alice: string;
let bob: string;
let aliceMcp: McpClient;
beforeAll(async () => {
  t = await startTestApp();
  alice = await t.token('alice');
  bob = await t.token('bob');
  aliceMcp = await connectMcp(t.url, alice);
});
afterAll(async () => {
  await aliceMcp?.close();
  await t?.stop();
});

const metadataUrl = () => `${t.url}/.well-known/oauth-protected-resource/mcp`;

function expectProblem(
  answer: { status: number; headers: Headers; body: any },
  status: number,
  code: string,
) {
  expect(answer.status).toBe(status);
  expect(answer.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  expect(answer.body).toMatchObject({ status, code });
}

describe('the protected-resource metadata (RFC 9728)', () => {
  it('is served without a token, naming the resource and the scopes', async () => {
    const response = await fetch(metadataUrl());
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({
      resource: `${t.url}/mcp`,
      bearer_methods_supported: ['header'],
      scopes_supported: ['tasks:read', 'tasks:write', 'tasks:admin'],
    });
  });

  it('names AUTH_ISSUER as the authorization server when it is set', async () => {
    const other = await startTestApp({
      env: { AUTH_ISSUER: 'https://issuer.example', CORS_ORIGINS: 'http://app.example' },
    });
    try {
      const body = await (
        await fetch(`${other.url}/.well-known/oauth-protected-resource/mcp`)
      ).json();
      expect(body).toEqual({
        resource: `${other.url}/mcp`,
        bearer_methods_supported: ['header'],
        scopes_supported: ['tasks:read', 'tasks:write', 'tasks:admin'],
        authorization_servers: ['https://issuer.example'],
      });
      // An origin listed in CORS_ORIGINS is let through the Origin check (to the token check).
      const listed = await rawMcp(other.url, {
        method: 'GET',
        headers: { origin: 'http://app.example' },
      });
      expect(listed.status).toBe(401);
      const unlisted = await rawMcp(other.url, {
        method: 'GET',
        headers: { origin: 'http://evil.example' },
      });
      expect(unlisted.status).toBe(403);
    } finally {
      await other.stop();
    }
  });
});

describe('authentication, before any JSON-RPC', () => {
  it('answers 401 without a token, pointing at the resource metadata', async () => {
    for (const method of ['POST', 'GET', 'DELETE']) {
      const answer = await rawMcp(t.url, {
        method,
        body: method === 'POST' ? '{not json' : undefined,
      });
      expectProblem(answer, 401, 'UNAUTHENTICATED');
      expect(answer.headers.get('www-authenticate')).toBe(
        `Bearer resource_metadata="${metadataUrl()}"`,
      );
    }
    const refused = await connectMcp(t.url, null).catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(Error);
  });

  it('answers 401 invalid_token for a forged, malformed or expired token', async () => {
    const expired = await t.token('alice', ['tasks:read', 'tasks:write'], -60);
    for (const token of [`${alice.slice(0, -4)}AAAA`, 'not.a.jwt', expired]) {
      const answer = await rawMcp(t.url, {
        token,
        body: { jsonrpc: '2.0', id: 1, method: 'ping' },
      });
      expectProblem(answer, 401, 'UNAUTHENTICATED');
      expect(answer.headers.get('www-authenticate')).toBe(
        `Bearer resource_metadata="${metadataUrl()}", error="invalid_token"`,
      );
    }
  });

  it('answers 403 insufficient_scope naming the scope each method needs', async () => {
    const reader = await t.token('alice', ['tasks:read']);
    const writer = await t.token('alice', ['tasks:write']);
    const cases: Array<[string, string, string, Record<string, unknown>]> = [
      [reader, 'tools/call', 'tasks:write', { name: 'sleep', arguments: { ms: 1 }, task: {} }],
      [reader, 'tasks/cancel', 'tasks:write', { taskId: UNKNOWN_ID }],
      [writer, 'tasks/get', 'tasks:read', { taskId: UNKNOWN_ID }],
      [writer, 'tasks/result', 'tasks:read', { taskId: UNKNOWN_ID }],
      [writer, 'tasks/list', 'tasks:read', {}],
    ];
    for (const [token, method, scope, params] of cases) {
      const session = await rawSession(t.url, token);
      const answer = await rawMcp(t.url, {
        token,
        session,
        body: { jsonrpc: '2.0', id: 1, method, params },
      });
      expectProblem(answer, 403, 'FORBIDDEN');
      expect(answer.headers.get('www-authenticate')).toBe(
        `Bearer error="insufficient_scope", scope="${scope}"`,
      );
    }
  });

  it('lets a token without task scopes initialize and list tools, and the SDK sees 403 on a call', async () => {
    const bare = await t.token('alice', ['profile']);
    const client = await connectMcp(t.url, bare);
    expect((await client.client.listTools()).tools.length).toBeGreaterThan(0);
    const refused = await client.startTask('sleep', { ms: 1 }).catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(StreamableHTTPError);
    expect((refused as StreamableHTTPError).code).toBe(403);
    await client.close();
  });
});

describe('Origin', () => {
  it('refuses a foreign Origin with 403 and accepts the server’s own', async () => {
    const foreign = await rawMcp(t.url, {
      token: alice,
      body: { jsonrpc: '2.0', id: 1, method: 'ping' },
      headers: { origin: 'http://evil.example' },
    });
    expectProblem(foreign, 403, 'FORBIDDEN');
    const noToken = await rawMcp(t.url, {
      headers: { origin: 'http://evil.example' },
      method: 'GET',
    });
    expectProblem(noToken, 403, 'FORBIDDEN');
    const own = await rawMcp(t.url, {
      token: alice,
      body: INITIALIZE,
      headers: { origin: t.url },
    });
    expect(own.status).toBe(200);
  });
});

describe('bodies', () => {
  it('refuses a body over HTTP_MAX_BODY_BYTES with 413 and closes the connection', async () => {
    const big = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'ping',
      params: { pad: 'x'.repeat(1_100_000) },
    });
    const answer = await rawMcp(t.url, { token: alice, body: big });
    expectProblem(answer, 413, 'PAYLOAD_TOO_LARGE');
    expect(answer.headers.get('connection')).toBe('close');
  });

  it('refuses a body that is not application/json with 415, and bad JSON with -32700', async () => {
    const plain = await rawMcp(t.url, {
      token: alice,
      body: '{"jsonrpc":"2.0","id":1,"method":"ping"}',
      headers: { 'content-type': 'text/plain' },
    });
    expectProblem(plain, 415, 'UNSUPPORTED_MEDIA_TYPE');
    const broken = await rawMcp(t.url, { token: alice, body: '{"jsonrpc":' });
    expect(broken.status).toBe(400);
    expect(broken.body).toEqual({
      jsonrpc: '2.0',
      error: { code: -32700, message: 'Parse error: Invalid JSON' },
      id: null,
    });
  });
});

describe('sessions belong to the principal that opened them', () => {
  it('answers another principal’s token with the session id exactly like an unknown session', async () => {
    const session = aliceMcp.transport.sessionId as string;
    const ping = { jsonrpc: '2.0', id: 1, method: 'ping' };
    const headers = { 'mcp-protocol-version': '2025-11-25' };
    const foreign = await rawMcp(t.url, { token: bob, session, body: ping, headers });
    const unknown = await rawMcp(t.url, { token: bob, session: UNKNOWN_ID, body: ping, headers });
    expect(foreign.status).toBe(404);
    expect(foreign.text).toBe(unknown.text);
    expect(unknown.status).toBe(404);
    const stolen = await connectMcp(t.url, bob, { sessionId: session });
    const err = await stolen.client.listTools().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StreamableHTTPError);
    expect((err as StreamableHTTPError).code).toBe(404);
    // The owner's session lives on.
    expect((await aliceMcp.client.listTools()).tools.length).toBeGreaterThan(0);
  });

  it('reaches the owner’s tasks from every one of its sessions', async () => {
    const { task } = await aliceMcp.startTask('sleep', { ms: 0 });
    const other = await connectMcp(t.url, alice);
    const result = await other.client.experimental.tasks.getTaskResult(
      task.taskId,
      CallToolResultSchema,
    );
    expect(result.structuredContent).toEqual({ sleptMs: expect.any(Number) });
    await other.close();
  });
});

describe('someone else’s task id', () => {
  it('answers exactly like an unknown or malformed id on get, result and cancel', async () => {
    const { task } = await aliceMcp.startTask('sleep', { ms: 60_000 });
    const bobMcp = await connectMcp(t.url, bob);
    const admin = await connectMcp(t.url, await t.token('root', ADMIN_SCOPES));
    const ids: unknown[] = [task.taskId, UNKNOWN_ID, 'not-a-uuid', 42, ''];
    const calls = [
      ['tasks/get', GetTaskResultSchema],
      ['tasks/result', GetTaskPayloadResultSchema],
      ['tasks/cancel', CancelTaskResultSchema],
    ] as const;
    for (const client of [bobMcp, admin]) {
      for (const [method, schema] of calls) {
        for (const taskId of ids) {
          const err = await rpcError(
            client.client.request({ method, params: { taskId } } as never, schema as never),
          );
          expect([method, taskId, err.code, wireMessage(err)]).toEqual([
            method,
            taskId,
            -32602,
            'Task not found.',
          ]);
          expect(err.data).toBeUndefined();
        }
      }
      const listed = await client.client.experimental.tasks.listTasks();
      expect(listed.tasks.map((x) => x.taskId)).not.toContain(task.taskId);
    }
    expect((await aliceMcp.client.experimental.tasks.getTask(task.taskId)).status).toBe('working');
    await aliceMcp.client.experimental.tasks.cancelTask(task.taskId);
    await bobMcp.close();
    await admin.close();
  });
});
