import { SendMessageRequest } from '@a2a-js/sdk';
import {
  CreateTaskResultSchema,
  GetTaskResultSchema,
  ListTasksResultSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { a2aClient, list, messageId } from '../../helpers/a2a.js';
import { startTestApp, type TestApp } from '../../helpers/app.js';
import { hold } from '../../helpers/kinds.js';
import { connectMcp } from '../../helpers/mcp.js';

/** Labels on the MCP and A2A faces (DESIGN §15): taken at start, shown on every task. */

const KEY = 'taskhandle/labels';

let t: TestApp;
let token: string;
beforeAll(async () => {
  t = await startTestApp({ kinds: [hold] });
  token = await t.token('alice');
});
afterAll(() => t?.stop());

describe('MCP', () => {
  it('takes labels in tools/call _meta and returns them in every task result’s _meta', async () => {
    const mcp = await connectMcp(t.url, token);
    try {
      const created = await mcp.client.request(
        {
          method: 'tools/call',
          params: { name: 'hold', arguments: {}, task: {}, _meta: { [KEY]: { via: 'mcp' } } },
        },
        CreateTaskResultSchema,
      );
      const id = created.task.taskId;
      expect(created._meta?.[KEY]).toEqual({ via: 'mcp' });
      const got = await mcp.client.request(
        { method: 'tasks/get', params: { taskId: id } },
        GetTaskResultSchema,
      );
      expect(got._meta?.[KEY]).toEqual({ via: 'mcp' });
      const other = await mcp.startTask('hold', {});
      // tasks/list filters by the labels in its _meta, and names each task's labels by id.
      const listed = await mcp.client.request(
        { method: 'tasks/list', params: { _meta: { [KEY]: { via: 'mcp' } } } },
        ListTasksResultSchema,
      );
      expect(listed.tasks.map((x) => x.taskId)).toEqual([id]);
      expect(listed._meta?.[KEY]).toEqual({ [id]: { via: 'mcp' } });
      const all = await mcp.client.request(
        { method: 'tasks/list', params: {} },
        ListTasksResultSchema,
      );
      expect(all.tasks.map((x) => x.taskId)).toContain(other.task.taskId);
    } finally {
      await mcp.close();
    }
  });

  it('refuses bad labels in _meta', async () => {
    const mcp = await connectMcp(t.url, token);
    try {
      await expect(
        mcp.client.request(
          {
            method: 'tools/call',
            params: { name: 'hold', arguments: {}, task: {}, _meta: { [KEY]: { Bad: 'x' } } },
          },
          CreateTaskResultSchema,
        ),
      ).rejects.toThrow(/labels/);
    } finally {
      await mcp.close();
    }
  });
});

describe('A2A', () => {
  it('takes labels in the message metadata and shows them in every task’s metadata', async () => {
    const client = await a2aClient(t.url, token);
    const request = SendMessageRequest.fromJSON({
      message: {
        messageId: messageId(),
        role: 'ROLE_USER',
        parts: [{ data: {} }],
        metadata: { skill: 'hold', [KEY]: { via: 'a2a' } },
      },
      configuration: { returnImmediately: true },
    });
    const task: any = await client.sendMessage(request);
    expect(task.metadata[KEY]).toEqual({ via: 'a2a' });
    const got: any = await client.getTask({ id: task.id, historyLength: 0, tenant: '' });
    expect(got.metadata[KEY]).toEqual({ via: 'a2a' });
    const listed = await client.listTasks(list());
    const mine: any = listed.tasks.find((x) => x.id === task.id);
    expect(mine.metadata[KEY]).toEqual({ via: 'a2a' });
  });
});
