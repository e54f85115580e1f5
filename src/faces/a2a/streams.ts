import type { StreamResponse } from '@a2a-js/sdk';
import type { Actor } from '../../tasks/service.js';
import { isTerminal } from '../../tasks/status.js';
import type { Task } from '../../tasks/task.js';
import { artifactEvent, resultArtifact, statusEvent, taskEvent } from './mapping.js';

/** The next update, or done as soon as `signal` aborts (the client went away). */
async function nextOrAbort(
  updates: AsyncIterator<Task>,
  signal: AbortSignal,
): Promise<IteratorResult<Task, undefined>> {
  const done = { done: true, value: undefined } as const;
  if (signal.aborted) return done;
  let onAbort: () => void = () => {};
  const aborted = new Promise<typeof done>((resolve) => {
    onAbort = () => resolve(done);
    signal.addEventListener('abort', onAbort, { once: true });
  });
  try {
    return await Promise.race([updates.next(), aborted]);
  } finally {
    signal.removeEventListener('abort', onAbort);
  }
}

/** Whether a blocking SendMessage answers with this state: terminal, or waiting for a person. */
export const settled = (task: Task) => isTerminal(task.status) || task.status === 'input_required';

/**
 * Waits on a task's updates (current state first) until it is terminal or needs input, and
 * returns that state; or the last state seen if the updates end first (the task expired, the
 * token did) or the client went away. Always releases the subscription.
 */
export async function settle(
  updates: AsyncIterableIterator<Task>,
  signal: AbortSignal,
): Promise<Task | undefined> {
  let last: Task | undefined;
  try {
    for (;;) {
      const next = await nextOrAbort(updates, signal);
      if (next.done) return last;
      last = next.value;
      if (settled(last)) return last;
    }
  } finally {
    await updates.return?.();
  }
}

/**
 * A task's updates as an A2A stream (DESIGN §10): the task first (`first`, when the caller has
 * already taken it from the updates), then a statusUpdate per later version, the result
 * artifact just before the completed status; it ends after the terminal state (the updates
 * end there), when the updates end otherwise, or when the client goes away. Always releases
 * the subscription.
 */
export async function* follow(
  updates: AsyncIterableIterator<Task>,
  viewer: Actor,
  signal: AbortSignal,
  first?: Task,
): AsyncGenerator<StreamResponse, void, undefined> {
  try {
    let sentTask = false;
    if (first) {
      sentTask = true;
      yield taskEvent(first, viewer);
      if (isTerminal(first.status)) return;
    }
    for (;;) {
      const next = await nextOrAbort(updates, signal);
      if (next.done) return;
      const task = next.value;
      if (!sentTask) {
        sentTask = true;
        yield taskEvent(task, viewer);
        continue;
      }
      const artifact = resultArtifact(task, viewer);
      if (artifact) yield artifactEvent(task, artifact);
      yield statusEvent(task, viewer);
    }
  } finally {
    await updates.return?.();
  }
}

/** The first update (the current state), leaving the rest to `follow`. */
export async function firstOf(
  updates: AsyncIterableIterator<Task>,
  signal: AbortSignal,
): Promise<Task | undefined> {
  const next = await nextOrAbort(updates, signal);
  return next.done ? undefined : next.value;
}
