import { CreateTaskResultSchema, GetTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { eventually } from '../../helpers/app.js';
import { alice, t, useFileApp } from '../../helpers/file-app.js';
import { hold } from '../../helpers/kinds.js';
import { connectMcp } from '../../helpers/mcp.js';
import { v2Result, WITH_TASKS } from '../../helpers/mcp-v2.js';

/**
 * How a task's work is managed (DESIGN §14) travels in MCP's `_meta` under `taskhandle/*`,
 * on both revisions: MCP's task shapes have no room of their own for it.
 */

// The attempt is 0 when the task is stored, and counts up once a runner claims it.
const WORK = {
  'taskhandle/attempt': expect.any(Number),
  'taskhandle/maxAttempts': 3,
  'taskhandle/priority': 0,
  'taskhandle/labels': {},
};

useFileApp({ kinds: [hold] });

describe('MCP _meta carries the managed-work fields', () => {
  it('on 2025-11-25: the created task and tasks/get', async () => {
    const mcp = await connectMcp(t.url, alice);
    try {
      const created = await mcp.client.request(
        { method: 'tools/call', params: { name: 'hold', arguments: {}, task: {} } },
        CreateTaskResultSchema,
      );
      expect(created._meta).toMatchObject({ ...WORK, 'taskhandle/attempt': 0 });
      const got = await mcp.client.request(
        { method: 'tasks/get', params: { taskId: created.task.taskId } },
        GetTaskResultSchema,
      );
      expect(got._meta).toMatchObject(WORK);
    } finally {
      await mcp.close();
    }
  });

  it('on 2026-07-28: the CreateTaskResult and tasks/get', async () => {
    const created = await v2Result(
      t.url,
      alice,
      'tools/call',
      { name: 'hold', arguments: {} },
      { capabilities: WITH_TASKS },
    );
    expect(created.resultType).toBe('task');
    expect(created._meta).toMatchObject({ ...WORK, 'taskhandle/attempt': 0 });
    const got = await v2Result(
      t.url,
      alice,
      'tasks/get',
      { taskId: created.taskId },
      { capabilities: WITH_TASKS },
    );
    expect(got._meta).toMatchObject(WORK);
  });
});

describe('MCP _meta names the parent of a child task (DESIGN §16)', () => {
  it('taskhandle/parentId on both revisions; none on a task started outside', async () => {
    const parent = await t.gql(
      `mutation { startTask(input: { kind: "pipeline", input: { stages: 1, children: 1 } }) { id } }`,
      {},
      alice,
    );
    const parentId: string = parent.data.startTask.id;
    const childId = await eventually(async () => {
      const page = await t.app.tasks.tree.children({ id: 'alice', admin: false }, parentId);
      return page.tasks[0]?.id;
    });
    const mcp = await connectMcp(t.url, alice);
    try {
      for (const [taskId, expected] of [
        [childId, parentId],
        [parentId, undefined],
      ] as const) {
        const got = await mcp.client.request(
          { method: 'tasks/get', params: { taskId } },
          GetTaskResultSchema,
        );
        expect(got._meta?.['taskhandle/parentId']).toBe(expected);
      }
    } finally {
      await mcp.close();
    }
    const v2 = await v2Result(
      t.url,
      alice,
      'tasks/get',
      { taskId: childId },
      { capabilities: WITH_TASKS },
    );
    expect(v2._meta).toMatchObject({ 'taskhandle/parentId': parentId });
  });
});

describe('MCP _meta says why a held task waits (DESIGN §17)', () => {
  it('taskhandle/heldBecause, taskhandle/rateLimit and taskhandle/rateLimitKey on tasks/get', async () => {
    const start = async () =>
      (
        await t.gql(
          `mutation { startTask(input: { kind: "hold", rateLimitKey: "mcp-key",
              rateLimit: { limit: 1, periodMs: 3600000 } }) { id } }`,
          {},
          alice,
        )
      ).data.startTask.id as string;
    const running = await start();
    const held = await start();
    await eventually(async () =>
      (await t.app.tasks.get({ id: 'alice', admin: false }, held))?.heldBecause === 'rate_limit'
        ? true
        : undefined,
    );
    const mcp = await connectMcp(t.url, alice);
    try {
      const got = await mcp.client.request(
        { method: 'tasks/get', params: { taskId: held } },
        GetTaskResultSchema,
      );
      expect(got._meta).toMatchObject({
        'taskhandle/heldBecause': 'rate_limit',
        'taskhandle/rateLimit': { limit: 1, periodMs: 3_600_000 },
        'taskhandle/rateLimitKey': 'mcp-key',
      });
      expect(got.statusMessage).toMatch(/^Rate limited: next start at /);
    } finally {
      await mcp.close();
      for (const id of [running, held]) await t.app.tasks.cancel({ id: 'alice', admin: false }, id);
    }
  });
});
