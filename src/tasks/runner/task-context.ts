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
  signal: AbortSignal;
  progressThrottleMs: number;
  /** Asks the owner the questions not yet answered; resolves to every answer by key. */
  ask(requests: readonly InputQuestion[]): Promise<Record<string, unknown>>;
  /** The run's steps, waits and children (DESIGN §16). */
  durable: DurableRun;
}

/** The handler's `ctx` for the attempt of `row`: never the database itself. */
export function taskContext(row: TaskRow, parts: TaskContextParts): TaskContext {
  const { db, log, lease, signal, progressThrottleMs, ask, durable } = parts;
  return {
    taskId: row.id,
    owner: row.owner,
    attempt: row.attempt,
    input: row.input,
    signal,
    listOwnTasks: (request) =>
      listPage(db, row.owner, {
        first: Math.min(1_000, Math.max(1, Math.trunc(request.first ?? 100))),
        after: request.after,
        statuses: request.statuses,
      }),
    progress: progressWriter({
      db,
      log,
      taskId: row.id,
      lease,
      signal,
      throttleMs: progressThrottleMs,
    }),
    requestInput: (request) =>
      ask([request]).then((answers) => answers[request.key]) as Promise<any>,
    requestInputs: (requests) => ask(requests) as Promise<any>,
    step: (name, fn) => durable.step(name, fn),
    sleep: (name, ms) => durable.sleep(name, ms),
    sleepUntil: (name, at) => durable.sleepUntil(name, at),
    waitForSignal: (name, options) => durable.waitForSignal(name, options),
    signalUrl: (name) => durable.signalUrl(name),
    startChild: (name, kind, input, options) => durable.startChild(name, kind, input, options),
  };
}
