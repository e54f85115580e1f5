import { type Kysely, sql } from 'kysely';
import type { Database, TaskRow } from '../../db/types.js';
import { jsonText, notifyChanged, withoutNotifyColumns } from '../sql/common.js';
import type { Lease } from '../sql/leases.js';

/** Most completions written by one statement. */
const MAX_BATCH = 64;

interface Pending {
  id: string;
  lease: Lease;
  result: string | null;
  resolve(row: TaskRow | undefined): void;
  reject(err: unknown): void;
}

/**
 * Completes several tasks in one statement: each row exactly as `completeTask` would (fenced
 * by its lease, WORKING and unexpired only, version + 1, one NOTIFY per task). A transaction
 * that notifies holds Postgres's notify lock until its commit is flushed, so notifying
 * commits never group: one per task caps a worker at one completion per WAL flush.
 */
async function completeTasks(
  db: Kysely<Database>,
  tasks: ReadonlyArray<{ id: string; lease: Lease; result: string | null }>,
): Promise<TaskRow[]> {
  const result = await sql<TaskRow>`
    with t as (
      update tasks t set status = 'completed', result = c.result, progress = 1, status_message = null,
             worker_id = null, lease_expires_at = null, version = t.version + 1, last_updated_at = now()
      from unnest(${tasks.map((c) => c.id)}::uuid[], ${tasks.map((c) => c.lease.workerId)}::text[],
                  ${tasks.map((c) => c.lease.attempt)}::int[], ${tasks.map((c) => c.result)}::jsonb[]) as c(id, worker_id, attempt, result)
      where t.id = c.id and t.worker_id = c.worker_id and t.attempt = c.attempt
        and t.status = 'working' and t.expires_at > now()
      returning t.*
    )
    select t.*, ${notifyChanged} as notified from t`.execute(db);
  return result.rows.map((row) => withoutNotifyColumns(row)!);
}

/**
 * The runner's completions, batched without a timer: those that arrive in the same turn of the
 * event loop go out together at its end, and those that arrive during a write go together in
 * the next statement. No added delay at low load; at high load, one commit for many tasks.
 */
export class CompletionWriter {
  private queue: Pending[] = [];
  private writing = false;

  constructor(private readonly db: Kysely<Database>) {}

  /**
   * @returns the completed row; `undefined` when the lease no longer holds (nothing changed)
   * @throws TypeError (as a rejection) for a result JSON cannot express; nothing is written
   */
  complete(id: string, lease: Lease, result: unknown): Promise<TaskRow | undefined> {
    return new Promise((resolve, reject) => {
      this.queue.push({ id, lease, result: jsonText(result ?? null), resolve, reject });
      if (this.writing) return;
      // Wait out this turn of the event loop: tasks that finish on the same I/O event (a batch
      // claimed together, quick handlers) go out in one statement, not one alone and the rest after.
      this.writing = true;
      setImmediate(() => void this.flush());
    });
  }

  private async flush(): Promise<void> {
    while (this.queue.length > 0) {
      const batch = this.queue.splice(0, MAX_BATCH);
      try {
        const rows = new Map((await completeTasks(this.db, batch)).map((row) => [row.id, row]));
        for (const pending of batch) pending.resolve(rows.get(pending.id));
      } catch (err) {
        for (const pending of batch) pending.reject(err);
      }
    }
    this.writing = false;
  }
}
