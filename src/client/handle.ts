import { setTimeout as sleep } from 'node:timers/promises';
import { ClientError, TaskCancelled, TaskFailed } from './errors.js';
import { type ClientTask, isTerminal, TASK_FIELDS, type TaskStatus } from './task.js';
import { isTransient, type Transport } from './transport.js';

/** Before any state is known, the first poll waits this long. */
const DEFAULT_POLL_MS = 1_000;

export interface FollowOptions {
  /** Stops following: the iterator or promise rejects with the signal's reason. */
  signal?: AbortSignal;
}

/**
 * A task by its id. Follows it over graphql-ws and, while the WebSocket cannot be had, by
 * polls at the task's `pollIntervalMs`, so a server restart in between goes unnoticed.
 */
export class TaskHandle<Result = unknown> {
  private latest: ClientTask<Result> | undefined;

  constructor(
    readonly id: string,
    private readonly transport: Transport,
    known?: ClientTask<Result>,
  ) {
    this.latest = known;
  }

  /** The last version this handle has seen (undefined before any). */
  get task(): ClientTask<Result> | undefined {
    return this.latest;
  }

  /** The status of the last version seen. */
  get status(): TaskStatus | undefined {
    return this.latest?.status;
  }

  private seen(task: ClientTask<Result>): ClientTask<Result> {
    if (!this.latest || task.version >= this.latest.version) this.latest = task;
    return task;
  }

  /** The task now. @throws ClientError NOT_FOUND once it is unknown, expired or not yours */
  async refresh(options: FollowOptions = {}): Promise<ClientTask<Result>> {
    const { task } = await this.transport.request<{ task: ClientTask<Result> | null }>(
      `query($id: ID!) { task(id: $id) { ${TASK_FIELDS} } }`,
      { id: this.id },
      options.signal,
    );
    if (!task) throw notFound(this.id);
    return this.seen(task);
  }

  /** Cancels the task; resolves with its new state. */
  async cancel(): Promise<ClientTask<Result>> {
    const { cancelTask } = await this.transport.request<{ cancelTask: ClientTask<Result> }>(
      `mutation($id: ID!) { cancelTask(id: $id) { ${TASK_FIELDS} } }`,
      { id: this.id },
    );
    return this.seen(cancelTask);
  }

  /** Answers the task's input request `key` with `value`; resolves with its new state. */
  async answer(key: string, value: unknown): Promise<ClientTask<Result>> {
    const { provideTaskInput } = await this.transport.request<{
      provideTaskInput: ClientTask<Result>;
    }>(
      `mutation($id: ID!, $key: String!, $value: JSON!) {
        provideTaskInput(id: $id, key: $key, value: $value) { ${TASK_FIELDS} } }`,
      { id: this.id, key, value },
    );
    return this.seen(provideTaskInput);
  }

  /**
   * The task's result once it is COMPLETED.
   * @throws TaskFailed (its `code` and `message`) when it ends FAILED
   * @throws TaskCancelled when it ends CANCELLED
   * @throws ClientError NOT_FOUND if it expires first, or another refusal (UNAUTHENTICATED…)
   */
  async result(options: FollowOptions = {}): Promise<Result> {
    let last: ClientTask<Result> | undefined;
    for await (const task of this.updates(options)) last = task;
    // updates() ends only after a terminal version
    if (last!.status === 'FAILED') throw new TaskFailed(last!);
    if (last!.status === 'CANCELLED') throw new TaskCancelled(last!);
    return last!.result as Result;
  }

  /**
   * Every version of the task from the current one on, each once and in order (versions
   * that pass while the server is away are skipped), ending after a terminal one.
   * Keeps trying through restarts and unreachable spells once the task is known to exist;
   * before that, an unreachable server is an error at once.
   * @throws ClientError NOT_FOUND if the task ends without a final state (it expired)
   */
  async *updates(options: FollowOptions = {}): AsyncGenerator<ClientTask<Result>> {
    const { signal } = options;
    let version = 0;
    const fresh = (task: ClientTask<Result>) => {
      if (task.version <= version) return false;
      version = task.version;
      this.seen(task);
      return true;
    };
    let reached = this.latest !== undefined;
    for (;;) {
      try {
        for await (const { taskUpdated } of this.transport.subscribe<{
          taskUpdated: ClientTask<Result>;
        }>(
          `subscription($id: ID!) { taskUpdated(id: $id) { ${TASK_FIELDS} } }`,
          { id: this.id },
          signal,
        )) {
          reached = true;
          if (!fresh(taskUpdated)) continue;
          yield taskUpdated;
          if (isTerminal(taskUpdated.status)) return;
        }
        // Completed before a final state: the task expired, or the token did. A poll tells.
      } catch (err) {
        signal?.throwIfAborted();
        if (!isTransient(err)) throw err;
      }
      try {
        const task = await this.refresh({ ...options });
        reached = true;
        if (fresh(task)) {
          yield task;
          if (isTerminal(task.status)) return;
        }
      } catch (err) {
        signal?.throwIfAborted();
        if (!reached || !isTransient(err)) throw err;
      }
      await pause(this.latest?.pollIntervalMs ?? DEFAULT_POLL_MS, signal);
    }
  }
}

function notFound(id: string): ClientError {
  return new ClientError('NOT_FOUND', `no task ${id} (unknown, expired, or not yours)`);
}

/** Waits `ms`; rejects with `signal`'s own reason when it aborts. */
async function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  try {
    await sleep(ms, undefined, signal ? { signal } : {});
  } catch (err) {
    signal?.throwIfAborted();
    throw err;
  }
}
