import type { CallToolResult, Task as McpTask } from '@modelcontextprotocol/sdk/types.js';
import { RELATED_TASK_META_KEY } from '@modelcontextprotocol/sdk/types.js';
import type { Task } from '../../../tasks/task.js';
import { statusMessageOf, toolResultOf } from '../core/results.js';

/**
 * How MCP 2025-11-25 writes tasks and results (DESIGN §9): the translation of the domain's Task
 * into its tasks utility's Task, and the core's tool result in its envelope.
 */

export function mcpTaskOf(task: Task): McpTask {
  const statusMessage = statusMessageOf(task);
  return {
    taskId: task.id,
    status: task.status,
    ...(statusMessage !== null ? { statusMessage } : {}),
    createdAt: task.createdAt.toISOString(),
    lastUpdatedAt: task.lastUpdatedAt.toISOString(),
    ttl: task.ttlMs,
    pollInterval: task.pollIntervalMs,
  };
}

/** What `tasks/result` answers for a final task: the tool's result, naming its task. */
export function callToolResultOf(task: Task): CallToolResult {
  return { ...toolResultOf(task), _meta: { [RELATED_TASK_META_KEY]: { taskId: task.id } } };
}
