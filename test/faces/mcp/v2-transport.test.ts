import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineTaskKind } from '../../../src/tasks/kinds.js';
import { startTestApp, type TestApp } from '../../helpers/app.js';
import { connectMcp } from '../../helpers/mcp.js';
import { TASKS, VERSION, v2, v2Result } from '../../helpers/mcp-v2.js';

const greet = defineTaskKind({
  name: 'greet',
  description: 'greets',
  inputSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
  taskSupport: 'forbidden',
  run: async ({ input }) => `Hello, ${(input as { name: string }).name}!`,
});

let t: TestApp;
let alice: string;
beforeAll(async () => {
  t = await startTestApp({ kinds: [greet] });
  alice = await t.token('alice');
});
afterAll(async () => {
  await t?.stop();
});

describe('MCP 2026-07-28 on /mcp', () => {
  it('answers server/discover statelessly with the tasks extension and the server’s name', async () => {
    const answer = await v2(t.url, alice, 'server/discover');
    expect(answer.status).toBe(200);
    expect(answer.headers.get('mcp-session-id')).toBeNull();
    expect(answer.body).toMatchObject({ jsonrpc: '2.0', id: 7 });
    expect(answer.body.result).toMatchObject({
      resultType: 'complete',
      supportedVersions: [VERSION, '2025-11-25'],
      capabilities: { tools: {}, extensions: { [TASKS]: {} } },
      _meta: { 'io.modelcontextprotocol/serverInfo': { name: 'taskhandle' } },
    });
    expect(answer.body.result.capabilities.tasks).toBeUndefined();
  });

  it('lists each kind with its taskSupport and a cache hint', async () => {
    const result = await v2Result(t.url, alice, 'tools/list');
    const tool = result.tools.find((candidate: { name: string }) => candidate.name === 'greet');
    expect(tool).toMatchObject({ execution: { taskSupport: 'forbidden' } });
    expect(result.tools.find((c: { name: string }) => c.name === 'sleep')).toMatchObject({
      execution: { taskSupport: 'optional' },
    });
    expect(result).toMatchObject({ resultType: 'complete', ttlMs: 0, cacheScope: 'private' });
  });

  it('refuses a _meta without its version or capabilities: 400, -32602, the request id kept', async () => {
    const answer = await v2(t.url, alice, 'server/discover', {}, { meta: {} });
    expect(answer.status).toBe(400);
    expect(answer.body).toMatchObject({ id: 7, error: { code: -32602 } });
    const noCapabilities = await v2(
      t.url,
      alice,
      'tools/list',
      {},
      {
        meta: { 'io.modelcontextprotocol/protocolVersion': VERSION },
      },
    );
    expect(noCapabilities.body.error.code).toBe(-32602);
  });

  it('refuses a version it does not serve with -32022, listing the ones it does', async () => {
    const meta = {
      'io.modelcontextprotocol/protocolVersion': '2099-01-01',
      'io.modelcontextprotocol/clientCapabilities': {},
    };
    const answer = await v2(
      t.url,
      alice,
      'server/discover',
      {},
      {
        meta,
        headers: { 'mcp-protocol-version': '2099-01-01' },
      },
    );
    expect(answer.status).toBe(400);
    expect(answer.body.error).toMatchObject({
      code: -32022,
      data: { supported: [VERSION, '2025-11-25'], requested: '2099-01-01' },
    });
  });

  it('refuses headers that disagree with the body, or are missing, with 400 -32020', async () => {
    const cases = [
      { 'mcp-method': 'tools/call' },
      { 'mcp-method': 'TOOLS/LIST' },
      { 'mcp-method': '' },
    ];
    for (const headers of cases) {
      const answer = await v2(t.url, alice, 'tools/list', {}, { headers });
      expect(answer.status).toBe(400);
      expect(answer.body.error.code).toBe(-32020);
    }
    const version = await v2(
      t.url,
      alice,
      'tools/list',
      {},
      {
        headers: { 'mcp-protocol-version': VERSION },
        meta: {
          'io.modelcontextprotocol/protocolVersion': '2099-01-01',
          'io.modelcontextprotocol/clientCapabilities': {},
        },
      },
    );
    expect(version.body.error.code).toBe(-32020);
    const name = await v2(
      t.url,
      alice,
      'tools/call',
      { name: 'greet', arguments: { name: 'x' } },
      {
        headers: { 'mcp-name': 'other' },
      },
    );
    expect([name.status, name.body.error.code]).toEqual([400, -32020]);
  });

  it('reads Mcp-Name in its base64 form and with whitespace around it', async () => {
    const params = { name: 'greet', arguments: { name: 'Ada' } };
    const sealed = `=?base64?${Buffer.from('greet').toString('base64')}?=`;
    for (const header of [sealed, '  greet  ']) {
      const answer = await v2(t.url, alice, 'tools/call', params, {
        headers: { 'mcp-name': header },
      });
      expect(answer.body.result.content).toEqual([{ type: 'text', text: 'Hello, Ada!' }]);
    }
  });

  it('answers removed and unknown methods with 404 and -32601', async () => {
    for (const method of ['initialize', 'ping', 'tasks/result', 'tasks/list', 'nope/nothing']) {
      const answer = await v2(t.url, alice, method, { taskId: 'x' });
      expect(answer.status).toBe(404);
      expect(answer.body).toMatchObject({ id: 7, error: { code: -32601 } });
    }
  });

  it('keeps authentication and scopes of §9: 401 with a challenge, 403 for a missing scope', async () => {
    const anonymous = await v2(t.url, null, 'server/discover');
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get('www-authenticate')).toContain('resource_metadata=');
    const reader = await t.token('reader', ['tasks:read']);
    const call = await v2(t.url, reader, 'tools/call', { name: 'greet', arguments: { name: 'x' } });
    expect(call.status).toBe(403);
    expect(call.headers.get('www-authenticate')).toContain('scope="tasks:write"');
  });

  it('serves the 2025-11-25 face on the same path, with sessions, beside it', async () => {
    const client = await connectMcp(t.url, alice);
    try {
      expect(client.transport.sessionId).toBeTruthy();
      const { tools } = await client.client.listTools();
      expect(tools.map((tool) => tool.name)).toContain('greet');
    } finally {
      await client.close();
    }
  });
});
