import { setTimeout as sleep } from 'node:timers/promises';
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { Database } from '../../db/types.js';
import { coerceError } from '../../errors.js';
import { releaseLeases } from '../sql/leases.js';
import type { LeaseKeeper } from './lease-keeper.js';
import type { LocalQueue } from './local-queue.js';
import type { RunningTask } from './running-task.js';

/**
 * How long a stop waits for the claim in flight, which gives back what it took (see
 * `claimLoop`) while the database is still open. A claim answers within milliseconds; one that
 * has not answered by then is stuck on an unreachable database, which would refuse the
 * give-back too: the stop goes on, and whatever that claim took waits for its lease to lapse
 * (TASK_LEASE_MS), as a lost worker's would.
 */
const CLAIM_IN_FLIGHT_WAIT_MS = 1_000;

/** Waits for `promise` to settle, at most `ms`; leaves no timer behind. */
async function settledWithin(promise: Promise<unknown> | undefined, ms: number): Promise<void> {
  if (!promise) return;
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    promise.catch(() => {}),
    new Promise<void>((resolve) => {
      timer = setTimeout(resolve, ms);
    }),
  ]);
  clearTimeout(timer);
}

/** A stop's first wait: the claim in flight, if any, for at most CLAIM_IN_FLIGHT_WAIT_MS. */
export function claimInFlight(pass: Promise<unknown> | undefined): Promise<void> {
  return settledWithin(pass, CLAIM_IN_FLIGHT_WAIT_MS);
}

/** What a stopping runner holds. */
export interface Holdings {
  db: Kysely<Database>;
  log: Logger;
  workerId: string;
  /** Tasks claimed but not started. */
  queue: LocalQueue;
  /** Tasks running or waiting for input. */
  tasks: () => RunningTask[];
  leases: LeaseKeeper;
}

/**
 * A runner's stop, once it claims no more: gives back the tasks queued but not started, lets
 * running handlers finish for `graceMs`, aborts the rest and gives their leases back. A lease
 * given back does not count the attempt, and another worker takes the task at once.
 */
export async function windDown(
  { db, log, workerId, queue, tasks, leases }: Holdings,
  graceMs: number,
): Promise<void> {
  const queued = queue.takeAll();
  const requeued = releaseLeases(db, workerId, queued).catch((err: unknown) => {
    log.error(
      { err: coerceError(err) },
      'could not give back queued tasks; their leases lapse after TASK_LEASE_MS',
    );
    return 0;
  });
  // Heartbeats go on through the grace period: a lapsed lease would let another worker run
  // a task this process is still finishing.
  const busy = tasks().filter((task) => !task.waiting);
  if (busy.length > 0)
    await Promise.race([Promise.all(busy.map((task) => task.done)), sleep(graceMs)]);
  const left = tasks();
  for (const task of left) task.abort('shutdown');
  await Promise.race([Promise.all(left.map((task) => task.done)), sleep(1_000)]);
  await leases.stop();
  const released = await releaseLeases(
    db,
    workerId,
    left.map((task) => ({ id: task.id, attempt: task.lease.attempt })),
  ).catch((err: unknown) => {
    log.error(
      { err: coerceError(err) },
      'could not release leases; they lapse after TASK_LEASE_MS',
    );
    return 0;
  });
  const givenBack = await requeued;
  if (left.length > 0 || queued.length > 0)
    log.info(
      { aborted: left.length, released, queued: queued.length, givenBack },
      'runner stopped',
    );
}
