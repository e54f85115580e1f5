import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { capturingLog, eventually, startTestApp, type TestApp } from '../../helpers/app.js';
import { connectMcp, INITIALIZE, rawMcp, rpcError, wireMessage } from '../../helpers/mcp.js';

/** An app whose log lines a test can wait for. */
async function loggedApp(env: Record<string, string>) {
  const { log, lines } = capturingLog();
  const app = await startTestApp({ env, log });
  return { app, lines };
}

const refusalOf = async (promise: Promise<unknown>) => {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(StreamableHTTPError);
  return err as StreamableHTTPError;
};

describe('sessions', () => {
  let t: TestApp;
  let lines: Array<Record<string, any>>;
  beforeAll(async () => {
    ({ app: t, lines } = await loggedApp({ MCP_SESSION_IDLE_MS: '3000', MCP_MAX_SESSIONS: '3' }));
  });
  afterAll(() => t?.stop());

  it('ends a session on DELETE', async () => {
    const client = await connectMcp(t.url, await t.token('alice'));
    const id = client.transport.sessionId;
    await client.transport.terminateSession();
    expect(client.transport.sessionId).toBeUndefined();
    const again = await connectMcp(t.url, await t.token('alice'), { sessionId: id as string });
    expect((await refusalOf(again.client.listTools())).code).toBe(404);
  });

  it('closes a session idle past MCP_SESSION_IDLE_MS, but not one waiting on tasks/result', async () => {
    const alice = await t.token('alice');
    const idle = await connectMcp(t.url, alice);
    const busy = await connectMcp(t.url, alice);
    const { task } = await busy.startTask('approval', { question: 'Hold on?' });
    const waiting = busy.client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    await eventually(async () =>
      lines.some((l) => l.msg === 'MCP session closed' && l.session === idle.transport.sessionId)
        ? true
        : undefined,
    );
    expect((await refusalOf(idle.client.listTools())).code).toBe(404);
    // The busy session outlived the sweep that closed its idle twin.
    expect(
      lines.some((l) => l.msg === 'MCP session closed' && l.session === busy.transport.sessionId),
    ).toBe(false);
    await busy.client.experimental.tasks.cancelTask(task.taskId);
    expect((await waiting).isError).toBe(true);
    await busy.close();
  });

  it('serves the GET stream of a session as Server-Sent Events', async () => {
    const alice = await t.token('alice');
    const client = await connectMcp(t.url, alice);
    const controller = new AbortController();
    const response = await fetch(`${t.url}/mcp`, {
      headers: {
        accept: 'text/event-stream',
        authorization: `Bearer ${alice}`,
        'mcp-session-id': client.transport.sessionId as string,
        'mcp-protocol-version': '2025-11-25',
      },
      signal: controller.signal,
    });
    // The SDK client may hold the one GET stream of its session already: 409 says so.
    expect([200, 409]).toContain(response.status);
    if (response.status === 200)
      expect(response.headers.get('content-type')).toBe('text/event-stream');
    controller.abort();
    await client.close();
  });
  it('refuses initialize beyond MCP_MAX_SESSIONS with 503 and Retry-After', async () => {
    const bob = await t.token('bob');
    const held = [];
    // Sessions of earlier tests may still be held until the idle sweep: fill whatever is left.
    for (;;) {
      const answer = await rawMcp(t.url, { token: bob, body: INITIALIZE });
      if (answer.status === 503) {
        expect(answer.headers.get('content-type')).toMatch(/^application\/problem\+json/);
        expect(answer.body).toMatchObject({ status: 503, code: 'SERVICE_UNAVAILABLE' });
        expect(Number(answer.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
        break;
      }
      expect(answer.status).toBe(200);
      held.push(answer.headers.get('mcp-session-id'));
      expect(held.length).toBeLessThanOrEqual(3);
    }
    expect((await refusalOf(connectMcp(t.url, bob))).code).toBe(503);
    // Once one is ended, a new one fits.
    await rawMcp(t.url, { method: 'DELETE', token: bob, session: held[0] as string });
    const client = await connectMcp(t.url, bob);
    expect((await client.client.listTools()).tools.length).toBeGreaterThan(0);
    await client.close();
  });
});

describe('faults', () => {
  it('answers -32603, masked, and logs the cause when the store fails', async () => {
    const { app: t, lines } = await loggedApp({});
    try {
      const client = await connectMcp(t.url, await t.token('alice'));
      await sql`alter table tasks rename to tasks_away`.execute(t.app.db.kysely);
      try {
        const err = await rpcError(client.client.experimental.tasks.listTasks());
        expect(err.code).toBe(-32603);
        expect(wireMessage(err)).toBe('Unexpected error.');
      } finally {
        await sql`alter table tasks_away rename to tasks`.execute(t.app.db.kysely);
      }
      const logged = lines.find((l) => l.msg === 'unexpected error in the MCP face');
      expect(logged?.method).toBe('tasks/list');
      expect(logged?.err?.message).toMatch(/tasks/);
      expect((await client.client.experimental.tasks.listTasks()).tasks).toEqual([]);
      await client.close();
    } finally {
      await t.stop();
    }
  });

  it('ends waiting requests and every session when the app stops', async () => {
    const t = await startTestApp();
    const client = await connectMcp(t.url, await t.token('alice'));
    const { task } = await client.startTask('approval', { question: 'Stop?' });
    const waiting = client.client.experimental.tasks
      .getTaskResult(task.taskId, CallToolResultSchema)
      .then(
        () => 'answered',
        (err: { code?: number; message: string }) => `${err.code}: ${wireMessage(err)}`,
      );
    await eventually(async () =>
      (await client.client.experimental.tasks.getTask(task.taskId)).status === 'input_required'
        ? true
        : undefined,
    );
    await t.stop();
    expect(await waiting).toBe('-32053: The server is stopping; ask again.');
    const again = await connectMcp(t.url, await t.token('alice')).catch((err: unknown) => err);
    expect(again).toBeInstanceOf(Error);
    await client.close();
  });
});
