import { sql } from 'kysely';
import { prepared } from '../../db/pg-pool.js';
import type { Executor, TaskRow } from '../../db/types.js';

/**
 * The claim (DESIGN §14, §17): a worker's one statement that leases its next tasks, holding
 * back those over their key's concurrency or rate limit and taking owners in turn; its lease
 * is the fencing token every write in leases.ts matches.
 */

export interface Claim {
  /** The claimed rows, in the order the claim took them (the order to start them in). */
  rows: TaskRow[];
  /**
   * The earliest instant a task waiting for its time (any kind) or a rate-limited key of these
   * kinds falls due, if any.
   */
  nextDue: Date | null;
  /** The owner the next fair claim goes on after (see {@link ClaimOptions.cursor}). */
  cursor: string;
  /**
   * A claimable task was left because it could not start at once: a rate-limited first start
   * beyond `free` (DESIGN §17). The caller claims again when a slot frees.
   */
  waiting: boolean;
}

/**
 * A task a worker may claim now: WORKING, unexpired, due, waiting for nothing, with no live
 * lease and attempts left. The claim (taskhandle_claim_tasks, and its walk over owners,
 * taskhandle_next_owner) and the queue's metrics (stats.ts) ask the same question.
 */
export const claimable = sql`status = 'working' and expires_at > now() and hold is null
  and run_at <= now() and (lease_expires_at is null or lease_expires_at < now())
  and attempt < max_attempts`;

export interface ClaimOptions {
  /**
   * Within a priority, owners take turns (RUNNER_FAIRNESS=owner); false: §14's order, the
   * earliest due first. @default true
   */
  fair?: boolean;
  /**
   * How many of the claimed tasks the caller starts at once; a rate-limited task's first start
   * is claimed only among them, since the claim counts it as started. @default limit
   */
  free?: number;
  /**
   * The owner the last fair claim stopped after (its {@link Claim.cursor}): with more owners
   * than a claim takes, the next one goes on from there. @default ''
   */
  cursor?: string;
}

/**
 * Claims up to `limit` runnable tasks of the given kinds (`taskhandle_claim_tasks`, migration
 * 0012): highest priority first, then owners in turn (or, not `fair`, the earliest due),
 * skipping rows other workers hold, tasks whose concurrency key is at its limit and first
 * starts whose rate limit key is full (those wait held until their key frees). A runnable task
 * is {@link claimable}; `attempt` counts the claim. The same statement answers when the next
 * delayed task or rate-limited key falls due, for the runner's timer.
 *
 * The claim commits without waiting for its WAL flush (`synchronous_commit = off` for this
 * transaction only): a claim lost in a Postgres crash just leaves the task claimable again,
 * which at-least-once execution allows, and the worker starts one disk flush sooner. Each
 * connection prepares the statement once: parsing and planning it cost Postgres more than a
 * claim that finds nothing.
 */
export async function claimWork(
  db: Executor,
  workerId: string,
  kinds: readonly string[],
  limit: number,
  leaseMs: number,
  { fair = true, free = limit, cursor = '' }: ClaimOptions = {},
): Promise<Claim> {
  const result = await sql<
    TaskRow & { next_due: Date | null; next_cursor: string | null; left_waiting: boolean | null }
  >`${prepared}
    select (c.claimed).*, c.next_due, c.next_cursor, c.left_waiting
    from taskhandle_claim_tasks(${workerId}, ${kinds}::text[], ${limit}::int, ${leaseMs}::int,
      ${fair}::boolean, ${free}::int, ${cursor}::text) c`.execute(db);
  // The claimed rows, then one row with no task that carries the rest.
  const rows: TaskRow[] = [];
  // Cleared rather than deleted or copied away: a deleted property turns each row into a
  // dictionary (3 KB a row, the most any line of the worker allocated in the drain benchmark),
  // and a copy of forty fields costs nearly as much. The last row, with no task, carries the rest.
  type Claimed = TaskRow & {
    next_due?: Date | null | undefined;
    next_cursor?: string | null | undefined;
    left_waiting?: boolean | null | undefined;
  };
  let last: Claimed | undefined;
  for (const row of result.rows as Claimed[]) {
    if (!row.id) {
      last = row;
      continue;
    }
    row.next_due = undefined;
    row.next_cursor = undefined;
    row.left_waiting = undefined;
    rows.push(row);
  }
  return {
    rows,
    nextDue: last?.next_due ?? null,
    cursor: last?.next_cursor ?? cursor,
    waiting: last?.left_waiting === true,
  };
}

/** The claimed rows of {@link claimWork}. */
export async function claimTasks(
  db: Executor,
  workerId: string,
  kinds: readonly string[],
  limit: number,
  leaseMs: number,
  options?: ClaimOptions,
): Promise<TaskRow[]> {
  return (await claimWork(db, workerId, kinds, limit, leaseMs, options)).rows;
}
