import type { Actor } from './service.js';
import { isTerminal } from './status.js';
import type { Task } from './task.js';
import { mayReadPayloads } from './visibility.js';

/**
 * The task handle as clients of the MCP Tasks extension expect it (DESIGN §6), the shape the
 * REST face answers and webhooks send.
 */
export interface TaskHandle {
  resultType: 'task';
  taskId: string;
  status: Task['status'];
  createdAt: string;
  lastUpdatedAt: string;
  ttlMs: number;
  pollIntervalMs: number;
  /** Runs started so far, and the most there may be (DESIGN §14). */
  attempt: number;
  maxAttempts: number;
  /** While the task waits for its time or its next attempt. */
  runAt?: string;
  /** The last failed attempt's error, while retrying and after. */
  lastError?: Task['lastError'];
  /** Why it waits to be claimed, while it does (DESIGN §14, §17). */
  heldBecause?: NonNullable<Task['heldBecause']>;
  /** DESIGN §15: in every handle, `{}` when none were given. */
  labels: Record<string, string>;
  /** The task this one runs again, when it is a re-run. */
  retryOf?: string;
  /** The schedule whose occurrence it is (DESIGN §17). */
  scheduleKey?: string;
  /** The task whose handler started this one (DESIGN §16). */
  parentId?: string;
}

/** A status monitor's view: the handle plus what `viewer` may see of the outcome. */
export interface TaskReport extends TaskHandle {
  statusMessage?: string;
  result?: unknown;
  error?: Task['error'];
  inputRequest?: Task['inputRequest'];
  /** Every outstanding question, the first being `inputRequest`. */
  inputRequests?: Task['inputRequests'];
}

export function handleOf(task: Task): TaskHandle {
  const handle: TaskHandle = {
    resultType: 'task',
    taskId: task.id,
    status: task.status,
    createdAt: task.createdAt.toISOString(),
    lastUpdatedAt: task.lastUpdatedAt.toISOString(),
    ttlMs: task.ttlMs,
    pollIntervalMs: task.pollIntervalMs,
    attempt: task.attempt,
    maxAttempts: task.maxAttempts,
    labels: task.labels,
    ...(task.retryOf ? { retryOf: task.retryOf } : {}),
    ...(task.scheduleKey ? { scheduleKey: task.scheduleKey } : {}),
    ...(task.parentId ? { parentId: task.parentId } : {}),
  };
  if (task.runAt) handle.runAt = task.runAt.toISOString();
  if (task.lastError) handle.lastError = task.lastError;
  if (task.heldBecause) handle.heldBecause = task.heldBecause;
  return handle;
}

/** The handle with the status message, the error, and — for the owner only — result and question. */
export function reportOf(task: Task, viewer: Actor | null): TaskReport {
  const report: TaskReport = handleOf(task);
  const owner = mayReadPayloads(task, viewer);
  if (task.statusMessage !== null) report.statusMessage = task.statusMessage;
  if (owner && task.status === 'completed') report.result = task.result ?? null;
  if (task.error) report.error = task.error;
  if (owner && task.inputRequest) {
    report.inputRequest = task.inputRequest;
    report.inputRequests = task.inputRequests;
  }
  return report;
}

/** How long a poller should wait, in whole seconds, for `Retry-After`; undefined once terminal. */
export function retryAfterSeconds(task: Task): number | undefined {
  return isTerminal(task.status) ? undefined : Math.max(1, Math.ceil(task.pollIntervalMs / 1000));
}
