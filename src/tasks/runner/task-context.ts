import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { Database, TaskRow } from '../../db/types.js';
import type { InputQuestion, TaskContext } from '../kinds.js';
import { listPage } from '../listing.js';
import type { Lease } from '../sql/leases.js';
import type { DurableRun } from '../steps/durable-run.js';
import { progressWriter } from './progress-writer.js';

/** What a running task gives its handler besides its own row. */
export interface TaskContextParts {
  db: Kysely<Database>;
  log: Logger;
  lease: Lease;
  /** The handler's signal (made when first asked for). */
  signal(): AbortSignal;
  progressThrottleMs: number;
  /** Asks the owner the questions not yet answered; resolves to every answer by key. */
  ask(requests: readonly InputQuestion[]): Promise<Record<string, unknown>>;
  /** The run's steps, waits and children (DESIGN §16), made when first asked for. */
  durable(): DurableRun;
}

/** The handler's `ctx` for the attempt of `row`: never the database itself. */
export function taskContext(row: TaskRow, parts: TaskContextParts): TaskContext {
  return new RunContext(row, parts);
}

/**
 * `ctx`. Its functions are made when a handler first reads them, each bound once (handlers
 * destructure them: `run({ input, progress })`), so a handler pays for what it uses: most use
 * two or three of the thirteen, and a drain of no-op tasks spent a tenth of what its worker
 * allocated making the others.
 */
class RunContext implements TaskContext {
  readonly taskId: string;
  readonly owner: string;
  readonly attempt: number;
  readonly input: unknown;
  #progress: TaskContext['progress'] | undefined;
  #requestInput: TaskContext['requestInput'] | undefined;
  #requestInputs: TaskContext['requestInputs'] | undefined;
  #listOwnTasks: TaskContext['listOwnTasks'] | undefined;
  #step: TaskContext['step'] | undefined;
  #sleep: TaskContext['sleep'] | undefined;
  #sleepUntil: TaskContext['sleepUntil'] | undefined;
  #waitForSignal: TaskContext['waitForSignal'] | undefined;
  #signalUrl: TaskContext['signalUrl'] | undefined;
  #startChild: TaskContext['startChild'] | undefined;

  constructor(
    row: TaskRow,
    private readonly parts: TaskContextParts,
  ) {
    this.taskId = row.id;
    this.owner = row.owner;
    this.attempt = row.attempt;
    this.input = row.input;
  }

  get signal(): AbortSignal {
    return this.parts.signal();
  }

  get progress(): TaskContext['progress'] {
    const { db, log, lease, progressThrottleMs } = this.parts;
    this.#progress ??= progressWriter({
      db,
      log,
      taskId: this.taskId,
      lease,
      signal: this.parts.signal(),
      throttleMs: progressThrottleMs,
    });
    return this.#progress;
  }

  get requestInput(): TaskContext['requestInput'] {
    this.#requestInput ??= (request) =>
      this.parts.ask([request]).then((answers) => answers[request.key]) as Promise<any>;
    return this.#requestInput;
  }

  get requestInputs(): TaskContext['requestInputs'] {
    this.#requestInputs ??= (requests) => this.parts.ask(requests) as Promise<any>;
    return this.#requestInputs;
  }

  get listOwnTasks(): TaskContext['listOwnTasks'] {
    this.#listOwnTasks ??= (request) =>
      listPage(this.parts.db, this.owner, {
        first: Math.min(1_000, Math.max(1, Math.trunc(request.first ?? 100))),
        after: request.after,
        statuses: request.statuses,
      });
    return this.#listOwnTasks;
  }

  get step(): TaskContext['step'] {
    this.#step ??= (name, fn) => this.parts.durable().step(name, fn);
    return this.#step;
  }

  get sleep(): TaskContext['sleep'] {
    this.#sleep ??= (name, ms) => this.parts.durable().sleep(name, ms);
    return this.#sleep;
  }

  get sleepUntil(): TaskContext['sleepUntil'] {
    this.#sleepUntil ??= (name, at) => this.parts.durable().sleepUntil(name, at);
    return this.#sleepUntil;
  }

  get waitForSignal(): TaskContext['waitForSignal'] {
    this.#waitForSignal ??= (name, options) => this.parts.durable().waitForSignal(name, options);
    return this.#waitForSignal;
  }

  get signalUrl(): TaskContext['signalUrl'] {
    this.#signalUrl ??= (name) => this.parts.durable().signalUrl(name);
    return this.#signalUrl;
  }

  get startChild(): TaskContext['startChild'] {
    this.#startChild ??= (name, kind, input, options) =>
      this.parts.durable().startChild(name, kind, input, options);
    return this.#startChild;
  }
}
