import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Cluster, spawnCluster } from '../../helpers/cluster.js';
import { backend } from '../../helpers/db.js';
import { connectMcp, type McpClient } from '../../helpers/mcp.js';
import { gqlAt, type ServerProcess } from '../../helpers/process.js';

/**
 * Two server processes on one Postgres, started as users start them: a task started on one
 * process's /mcp is collected, asked about and cancelled on the other's. Sessions live in the
 * process that opened them; tasks live in the shared store. Postgres only (PGlite is one
 * process's).
 */

let cluster: Cluster<[ServerProcess, ServerProcess]>;
let one: ServerProcess;
let two: ServerProcess;
let alice: string;
const clients: McpClient[] = [];

async function client(server: ServerProcess, options = {}): Promise<McpClient> {
  const connected = await connectMcp(server.url, alice, options);
  clients.push(connected);
  return connected;
}

describe.skipIf(backend === 'pglite')('MCP on two processes and one database', () => {
  beforeAll(async () => {
    cluster = await spawnCluster(['all', 'all']);
    [one, two] = cluster.servers;
    alice = await cluster.token('alice');
  });

  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close().catch(() => {})));
    await cluster?.stop();
  });

  it('collects on one process a task started on the other’s /mcp', async () => {
    const starter = await client(one);
    const collector = await client(two);
    const { task } = await starter.startTask('sleep', { ms: 300, steps: 3 });
    const result = await collector.client.experimental.tasks.getTaskResult(
      task.taskId,
      CallToolResultSchema,
    );
    expect(result.structuredContent).toMatchObject({ sleptMs: expect.any(Number) });
    expect((await collector.client.experimental.tasks.getTask(task.taskId)).status).toBe(
      'completed',
    );
    // The same id on GraphQL, on either process.
    const gql = await gqlAt(
      one.url,
      'query($id: ID!) { task(id: $id) { status } }',
      { id: task.taskId },
      alice,
    );
    expect(gql.data.task.status).toBe('COMPLETED');
  });

  it('asks, on the collecting process, the question of a task started on the other', async () => {
    const starter = await client(one);
    const asked: string[] = [];
    const collector = await client(two, {
      elicit: (params: { message: string }) => {
        asked.push(params.message);
        return { action: 'accept', content: { approved: true } };
      },
    });
    const { task } = await starter.startTask('approval', { question: 'Across?' });
    const result = await collector.client.experimental.tasks.getTaskResult(
      task.taskId,
      CallToolResultSchema,
    );
    expect(result.structuredContent).toEqual({ approved: true, comment: null });
    expect(asked).toEqual(['Across?']);
  });

  it('ends a wait on one process when the task is cancelled on the other', async () => {
    const starter = await client(one);
    const waiter = await client(two);
    const { task } = await starter.startTask('sleep', { ms: 3_600_000, steps: 1 });
    const waiting = waiter.client.experimental.tasks.getTaskResult(
      task.taskId,
      CallToolResultSchema,
    );
    expect((await starter.client.experimental.tasks.cancelTask(task.taskId)).status).toBe(
      'cancelled',
    );
    expect((await waiting).structuredContent).toEqual({
      code: 'CANCELLED',
      message: 'The task was cancelled.',
    });
  });

  it('keeps a session on the process that opened it', async () => {
    const opened = await client(one);
    const elsewhere = await connectMcp(two.url, alice, {
      sessionId: opened.transport.sessionId as string,
    });
    const err = await elsewhere.client.listTools().then(
      () => undefined,
      (e: { code?: number }) => e,
    );
    expect(err?.code).toBe(404);
  });
});
