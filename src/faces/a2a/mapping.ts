import {
  type TaskStatus as A2AStatus,
  type Task as A2ATask,
  type Artifact,
  type Message,
  type Part,
  Role,
  type StreamResponse,
  TaskState,
} from '@a2a-js/sdk';
import { TaskNotFoundError } from '@a2a-js/sdk/errors';
import type { Actor } from '../../tasks/service.js';
import type { TaskStatus } from '../../tasks/status.js';
import type { Task } from '../../tasks/task.js';
import { isTaskId } from '../../tasks/validation.js';
import { mayReadPayloads } from '../../tasks/visibility.js';
import { workMetadata } from '../../tasks/work-metadata.js';
import { partsOfResult, repliesWithMessage } from './result-parts.js';

/** Our statuses as A2A states (DESIGN §10); no other state is ever sent. */
export const STATE_OF: Record<TaskStatus, TaskState> = {
  working: TaskState.TASK_STATE_WORKING,
  input_required: TaskState.TASK_STATE_INPUT_REQUIRED,
  completed: TaskState.TASK_STATE_COMPLETED,
  cancelled: TaskState.TASK_STATE_CANCELED,
  failed: TaskState.TASK_STATE_FAILED,
};

/**
 * An A2A state filter as our statuses: null for none, empty for a state we never use (it
 * matches no task), undefined for a value that is not an A2A state.
 */
export function statusesOf(state: TaskState): TaskStatus[] | null | undefined {
  if (state === TaskState.TASK_STATE_UNSPECIFIED) return null;
  if (state === TaskState.UNRECOGNIZED) return undefined;
  return (Object.keys(STATE_OF) as TaskStatus[]).filter((status) => STATE_OF[status] === state);
}

export const textPart = (text: string): Part => ({
  content: { $case: 'text', value: text },
  metadata: undefined,
  filename: '',
  mediaType: '',
});

export const dataPart = (value: unknown): Part => ({
  content: { $case: 'data', value },
  metadata: undefined,
  filename: '',
  mediaType: '',
});

/** The value of the first data part, or undefined when there is none. */
export function firstData(parts: readonly Part[]): unknown {
  for (const part of parts) if (part.content?.$case === 'data') return part.content.value;
  return undefined;
}

/** The agent's message on a status: the question, the failure, or the handler's status text. */
function statusMessage(task: Task, viewer: Actor): Message | undefined {
  let parts: Part[];
  if (task.status === 'input_required' && task.inputRequest && mayReadPayloads(task, viewer)) {
    const { key, message, schema } = task.inputRequest;
    parts = [textPart(message), dataPart({ key, schema: schema ?? null })];
  } else if (task.status === 'failed' && task.error) {
    const { code, message } = task.error;
    parts = [textPart(message), dataPart({ code, message })];
  } else if (task.statusMessage !== null) {
    parts = [textPart(task.statusMessage)];
  } else {
    return undefined;
  }
  return {
    // One message per version: the same status always carries the same id.
    messageId: `${task.id}:${task.version}`,
    contextId: task.id,
    taskId: task.id,
    role: Role.ROLE_AGENT,
    parts,
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
}

function statusOf(task: Task, viewer: Actor): A2AStatus {
  return {
    state: STATE_OF[task.status],
    message: statusMessage(task, viewer),
    timestamp: task.lastUpdatedAt.toISOString(),
  };
}

/**
 * The result as A2A's one artifact, for a completed task seen by its owner: one data part, or
 * the parts the result names (see `partsOfResult`).
 */
export function resultArtifact(task: Task, viewer: Actor): Artifact | undefined {
  if (task.status !== 'completed' || !mayReadPayloads(task, viewer)) return undefined;
  return {
    artifactId: 'result',
    name: 'result',
    description: '',
    parts: partsOfResult(task.result) ?? [dataPart(task.result ?? null)],
    metadata: undefined,
    extensions: [],
  };
}

/**
 * The Message a waiting SendMessage answers instead of the task, when the completed task's
 * result asks for one (`repliesWithMessage`) and the viewer may read it: its parts, tied to
 * the task, which stays readable.
 */
export function replyMessage(task: Task, viewer: Actor): Message | undefined {
  if (task.status !== 'completed' || !mayReadPayloads(task, viewer)) return undefined;
  if (!repliesWithMessage(task.result)) return undefined;
  return {
    messageId: `${task.id}:${task.version}`,
    contextId: task.id,
    taskId: task.id,
    role: Role.ROLE_AGENT,
    parts: partsOfResult(task.result) ?? [],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
}

/** A task as `viewer` may see it over A2A: its context is itself, its history empty. */
export function toA2ATask(task: Task, viewer: Actor): A2ATask {
  const artifact = resultArtifact(task, viewer);
  return {
    id: task.id,
    contextId: task.id,
    status: statusOf(task, viewer),
    artifacts: artifact ? [artifact] : [],
    history: [],
    metadata: {
      kind: task.kind,
      createdAt: task.createdAt.toISOString(),
      ttlMs: task.ttlMs,
      expiresAt: task.expiresAt.toISOString(),
      pollIntervalMs: task.pollIntervalMs,
      progress: task.progress,
      version: task.version,
      ...workMetadata(task),
      [LABELS_KEY]: task.labels,
    },
  };
}

/** Where a task's labels (DESIGN §15) travel: the start message's and every task's metadata. */
export const LABELS_KEY = 'taskhandle/labels';

export const taskEvent = (task: Task, viewer: Actor): StreamResponse => ({
  payload: { $case: 'task', value: toA2ATask(task, viewer) },
});

export const statusEvent = (task: Task, viewer: Actor): StreamResponse => ({
  payload: {
    $case: 'statusUpdate',
    value: {
      taskId: task.id,
      contextId: task.id,
      status: statusOf(task, viewer),
      metadata: { progress: task.progress, version: task.version, ...workMetadata(task) },
    },
  },
});

export const artifactEvent = (task: Task, artifact: Artifact): StreamResponse => ({
  payload: {
    $case: 'artifactUpdate',
    value: {
      taskId: task.id,
      contextId: task.id,
      artifact,
      append: false,
      lastChunk: true,
      metadata: undefined,
    },
  },
});

/** A task id the caller named; one that is not a UUID names no task (DESIGN §10). */
export function taskIdOf(id: string): string {
  if (!isTaskId(id)) throw new TaskNotFoundError();
  return id;
}
