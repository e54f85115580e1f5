import { sql } from 'kysely';
import type { Executor, TaskRow } from '../../db/types.js';
import { ServiceError } from '../../errors.js';
import { validateAgainst } from '../kinds.js';
import { jsonText, notifyChanged, notifyReady, withoutNotifyColumns } from '../sql/common.js';
import type { Lease } from '../sql/leases.js';
import type { TaskFailure, TaskStatus } from '../status.js';

/** A wait a handler reached and found unsatisfied, as the suspension sees it. */
export type WaitSpec =
  | { kind: 'time'; name: string; position: number; wakeAt: Date }
  | {
      kind: 'signal';
      name: string;
      position: number;
      /** The timeout's instant, if any. */
      wakeAt: Date | null;
      schema: Record<string, unknown> | null;
    }
  | { kind: 'child'; name: string; childId: string };

/** How a wait was found satisfied after all. */
export type Satisfied =
  | { value: unknown }
  | { child: { childId: string; status: TaskStatus; error: TaskFailure | null } };

export type SuspendOutcome =
  /** The lease no longer holds: the run must stop. */
  | { lost: true }
  /** Some waits are satisfied now: the handler goes on (nothing was suspended). */
  | { lost: false; satisfied: Map<string, Satisfied> }
  /** Suspended: the run ends; the row as written. */
  | { lost: false; suspended: TaskRow; wakeAt: Date | null };

/**
 * Suspends the task on `waits` (DESIGN §16), unless one of them is satisfied by now; one
 * transaction. It first locks the task row under the lease, as a signal's statement locks it
 * before it looks for a wait to wake; with children to wait for, it then takes the task's
 * children lock, which a child that ends takes shared before it reads its step
 * (`taskhandle_child_ended`, migration 0017). Whichever comes second sees what the first
 * committed, so neither a signal nor a child's end is lost between a handler's look and its
 * suspension. The children themselves are read without a lock: the claim and their outcomes
 * never wait for, or skip past, their parent's suspension.
 *
 * A kept payload that fails its wait's schema (it arrived before the wait said what it wants)
 * is dropped here, and the wait goes on: the sender may send a good one.
 *
 * Suspended: WORKING, unleased, `attempt` given back (a wake-up is not an attempt), out of the
 * claim's reach until its time (`hold = 'time'`, `run_at` the earliest wake-up) or its signal
 * or children (`hold = 'wait'`); `status_message` says what it waits for; `ran_ms` keeps the
 * running time used, which the next run's timeout goes on from.
 */
export async function suspendOrSatisfy(
  db: Executor,
  taskId: string,
  lease: Lease,
  waits: readonly WaitSpec[],
  /** `message`: the status message; `ranMs`: the attempt's running time so far. */
  { message, ranMs }: { message: string; ranMs: number },
): Promise<SuspendOutcome> {
  return db.transaction().execute(async (trx) => {
    const held = await sql<{ id: string; expires_at: Date }>`
      select id, expires_at from tasks
      where id = ${taskId}::uuid and worker_id = ${lease.workerId} and attempt = ${lease.attempt}::int
        and status = 'working' and expires_at > now()
      for no key update`.execute(trx);
    if (!held.rows[0]) return { lost: true };

    const satisfied = new Map<string, Satisfied>();
    const now = Date.now();
    for (const wait of waits)
      if (wait.kind === 'time' && wait.wakeAt.getTime() <= now)
        satisfied.set(wait.name, { value: null });
    await readSignals(trx, taskId, waits, satisfied);
    const { pending, expiresAt } = await readChildren(trx, taskId, waits, satisfied);
    if (satisfied.size > 0) return { lost: false, satisfied };

    // A child that expires before it ends wakes its parent then (it counts as failed); one
    // that expires with its parent (the default) wakes nobody.
    const parentExpiry = held.rows[0].expires_at;
    const wakeAt = earliest(waits, expiresAt && expiresAt < parentExpiry ? expiresAt : null);
    const times = waits.filter((w) => w.kind !== 'child');
    if (times.length > 0)
      await sql`
        insert into task_steps (task_id, name, position, state, wake_at, wait_schema)
        select ${taskId}::uuid, w.name, w.position, w.state, w.wake_at, w.wait_schema
        from unnest(${times.map((w) => w.name)}::text[], ${times.map((w) => w.position)}::int[],
                    ${times.map((w) => (w.kind === 'time' ? 'SLEEPING' : 'WAITING_SIGNAL'))}::text[],
                    ${times.map((w) => w.wakeAt)}::timestamptz[],
                    ${times.map((w) => (w.kind === 'signal' && w.schema ? jsonText(w.schema) : null))}::jsonb[])
          as w(name, position, state, wake_at, wait_schema)
        on conflict (task_id, name) do update set
          state = excluded.state, wake_at = excluded.wake_at, wait_schema = excluded.wait_schema
        where task_steps.state <> 'COMPLETED'`.execute(trx);
    const children = waits.filter((w) => w.kind === 'child').map((w) => w.name);
    if (children.length > 0)
      await sql`
        update task_steps set state = 'WAITING_CHILD'
        where task_id = ${taskId}::uuid and name = any(${children}::text[])
          and child_status is null`.execute(trx);
    const result = await sql<TaskRow>`
      with t as (
        update tasks set
          hold = ${wakeAt ? 'time' : 'wait'}, run_at = coalesce(date_trunc('milliseconds', ${wakeAt}::timestamptz), run_at),
          worker_id = null, lease_expires_at = null, attempt = greatest(attempt - 1, 0),
          children_waiting = ${pending}::int, status_message = ${message}, journaled = true,
          ran_ms = ${Math.round(ranMs)}::int,
          version = version + 1, last_updated_at = now()
        where id = ${taskId}::uuid
        returning *
      )
      select t.*, ${notifyChanged} as notified,
        case when t.hold = 'time' then ${notifyReady} end as ready
      from t`.execute(trx);
    return { lost: false, suspended: withoutNotifyColumns(result.rows[0])!, wakeAt };
  });
}

/** Signals kept for the signal waits: satisfied, or dropped when they fail the wait's schema. */
async function readSignals(
  trx: Executor,
  taskId: string,
  waits: readonly WaitSpec[],
  satisfied: Map<string, Satisfied>,
): Promise<void> {
  const signalWaits = waits.filter((w) => w.kind === 'signal');
  if (signalWaits.length === 0) return;
  const now = Date.now();
  const kept = await sql<{ name: string; payload: unknown }>`
    select name, payload from task_signals
    where task_id = ${taskId}::uuid and name = any(${signalWaits.map((w) => w.name)}::text[])`.execute(
    trx,
  );
  const payloads = new Map(kept.rows.map((r) => [r.name, r.payload]));
  for (const wait of signalWaits) {
    if (!payloads.has(wait.name)) {
      if (wait.wakeAt && wait.wakeAt.getTime() <= now) satisfied.set(wait.name, { value: null });
      continue;
    }
    const payload = payloads.get(wait.name);
    if (wait.schema && !fits(wait.schema, payload, wait.name)) {
      await sql`
        delete from task_signals where task_id = ${taskId}::uuid and name = ${wait.name}`.execute(
        trx,
      );
      continue;
    }
    satisfied.set(wait.name, { value: payload });
  }
}

/**
 * The awaited children, read under the task's children lock (see `suspendOrSatisfy`; its key
 * is written as migration 0017's trigger writes it): an ended (or gone) one satisfies its
 * wait.
 * @returns how many awaited children have not ended, and the earliest expiry among them
 */
async function readChildren(
  trx: Executor,
  taskId: string,
  waits: readonly WaitSpec[],
  satisfied: Map<string, Satisfied>,
): Promise<{ pending: number; expiresAt: Date | null }> {
  const childWaits = waits.filter((w) => w.kind === 'child');
  if (childWaits.length === 0) return { pending: 0, expiresAt: null };
  await sql`select pg_advisory_xact_lock(hashtextextended('taskhandle_children:' || ${taskId}::uuid, 0))`.execute(
    trx,
  );
  const rows = await sql<{
    id: string;
    status: TaskStatus;
    result: unknown;
    error: TaskFailure | null;
    expires_at: Date;
    expired: boolean;
  }>`
    select id, status, result, error, expires_at, expires_at <= now() as expired from tasks
    where id = any(${childWaits.map((w) => w.childId)}::uuid[])`.execute(trx);
  const byId = new Map(rows.rows.map((r) => [r.id, r]));
  let pending = 0;
  let expiresAt: Date | null = null;
  for (const wait of childWaits) {
    const child = byId.get(wait.childId);
    if (!child || child.expired) {
      satisfied.set(wait.name, {
        child: { childId: wait.childId, status: 'failed', error: CHILD_EXPIRED },
      });
    } else if (child.status === 'completed') {
      satisfied.set(wait.name, { value: child.result });
    } else if (child.status === 'failed' || child.status === 'cancelled') {
      satisfied.set(wait.name, {
        child: { childId: wait.childId, status: child.status, error: child.error },
      });
    } else {
      pending++;
      if (!expiresAt || child.expires_at < expiresAt) expiresAt = child.expires_at;
    }
  }
  return { pending, expiresAt };
}

/** What a child that expired before it ended (or is gone) counts as. */
export const CHILD_EXPIRED: TaskFailure = {
  code: 'EXPIRED',
  message: 'The child task expired before it ended.',
};

function fits(schema: Record<string, unknown>, payload: unknown, name: string): boolean {
  try {
    validateAgainst(schema, payload, `signal ${name}`);
    return true;
  } catch (err) {
    if (err instanceof ServiceError) return false;
    throw err;
  }
}

/** The earliest wake-up of the waits (a sleep's time, a signal's timeout), if any. */
function earliest(waits: readonly WaitSpec[], also: Date | null): Date | null {
  let at: Date | null = also;
  for (const wait of waits)
    if (wait.kind !== 'child' && wait.wakeAt && (!at || wait.wakeAt < at)) at = wait.wakeAt;
  return at;
}
