import type { Task } from './task.js';

/**
 * How the work behind a task is managed (DESIGN §14, §17), and the task that started it as its
 * child (§16), under `taskhandle/*` keys, for the faces whose task shapes are fixed by their
 * protocol but take extra data (MCP `_meta`, A2A `metadata`). Fields that are unset are left
 * out.
 */
export function workMetadata(task: Task): Record<string, unknown> {
  const meta: Record<string, unknown> = {
    'taskhandle/attempt': task.attempt,
    'taskhandle/maxAttempts': task.maxAttempts,
    'taskhandle/priority': task.priority,
  };
  if (task.runAt) meta['taskhandle/runAt'] = task.runAt.toISOString();
  if (task.concurrencyKey !== null) meta['taskhandle/concurrencyKey'] = task.concurrencyKey;
  if (task.concurrencyLimit !== null) meta['taskhandle/concurrencyLimit'] = task.concurrencyLimit;
  if (task.rateLimitKey !== null) meta['taskhandle/rateLimitKey'] = task.rateLimitKey;
  if (task.rateLimit !== null) meta['taskhandle/rateLimit'] = task.rateLimit;
  if (task.heldBecause !== null) meta['taskhandle/heldBecause'] = task.heldBecause;
  if (task.lastError) meta['taskhandle/lastError'] = task.lastError;
  if (task.parentId) meta['taskhandle/parentId'] = task.parentId;
  return meta;
}
