import type { Task } from '../../../tasks/task.js';
import { workMetadata } from '../../../tasks/work-metadata.js';
import { isRecord } from './rpc.js';

/**
 * How both revisions write a task and a tool's answer (DESIGN §9, §9b): the status message,
 * the `_meta` a task carries, and a tool's result or failure, with their fallback texts once.
 */

/** What a task's `statusMessage` says on both revisions: the question, the failure, or its own. */
export function statusMessageOf(task: Task): string | null {
  if (task.status === 'input_required' && task.inputRequest) return task.inputRequest.message;
  if (task.status === 'failed' && task.error) return task.error.message;
  return task.statusMessage;
}

/** Where a task's labels (DESIGN §15) travel: `tools/call`'s `_meta`, and every task result's. */
export const LABELS_META_KEY = 'taskhandle/labels';

/**
 * The `_meta` of a result carrying one task (MCP's Task has no room of its own): its labels
 * (DESIGN §15) and how its work is managed (§14: attempt, maxAttempts, priority, runAt, …).
 */
export function taskMeta(task: Task): Record<string, unknown> {
  return { ...workMetadata(task), [LABELS_META_KEY]: task.labels };
}

/** A tool's answer as both revisions carry it; each adds its own envelope (`_meta`, `resultType`). */
export type ToolResult = {
  isError?: true;
  content: Array<{ type: 'text'; text: string }>;
  structuredContent?: Record<string, unknown>;
};

/** A failure the model can read: the message as text, and `{ code, message }`. */
export function toolFailure(code: string, message: string): ToolResult {
  return {
    isError: true,
    content: [{ type: 'text', text: message }],
    structuredContent: { code, message },
  };
}

/**
 * The tool's answer for a final task, derived from the row alone so it is the same every
 * time: a result as JSON text with `structuredContent` (a non-object as `{ value }`), or as its
 * own text when it is a string and the revision says so (§9b); a failure or a cancellation as
 * a `toolFailure`.
 */
export function toolResultOf(task: Task, stringAsText = false): ToolResult {
  if (task.status === 'completed') {
    const result = task.result ?? null;
    if (stringAsText && typeof result === 'string') {
      return { content: [{ type: 'text', text: result }] };
    }
    return {
      content: [{ type: 'text', text: JSON.stringify(result) }],
      structuredContent: isRecord(result) ? result : { value: result },
    };
  }
  if (task.status === 'failed') {
    const error = task.error ?? { code: 'HANDLER_ERROR', message: 'The task failed.' };
    return toolFailure(error.code, error.message);
  }
  return toolFailure('CANCELLED', 'The task was cancelled.');
}
