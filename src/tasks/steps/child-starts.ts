import type { Kysely } from 'kysely';
import type { Database, StepRow, TaskRow } from '../../db/types.js';
import { ServiceError } from '../../errors.js';
import type { ChildOptions, KindRegistry } from '../kinds.js';
import { ownerActor, type RetentionPolicy } from '../requests.js';
import type { Lease } from '../sql/leases.js';
import { prepareStart } from '../start.js';
import { MAX_CHILDREN, type NewChild, startChildren } from './children-sql.js';

/** One `ctx.startChild` call, as the run hands it over. */
export interface ChildRequest {
  name: string;
  position: number;
  kind: string;
  input: unknown;
  options: ChildOptions;
  /** The children of the parent counting this one. */
  count: number;
}

/** Most children one statement starts. */
const BATCH = 500;

interface Queued {
  child: NewChild;
  resolve(row: TaskRow): void;
  reject(err: unknown): void;
}

/**
 * Starts handlers' child tasks (DESIGN §16): checks each as a start of the parent's owner
 * (kind, input, §14 fields), bounds its retention by the parent's, and stores the children a
 * parent starts in the same turn of the event loop (a loop of `startChild` calls, or a
 * `Promise.all`) in one statement and one commit (`startChildren`).
 */
export class ChildStarts {
  private readonly queues = new Map<string, { lease: Lease; queued: Queued[] }>();

  constructor(
    private readonly db: Kysely<Database>,
    private readonly kinds: KindRegistry,
    private readonly retention: RetentionPolicy,
  ) {}

  /**
   * @returns the child as stored
   * @throws ServiceError BAD_USER_INPUT for a bad kind, input or option, or past MAX_CHILDREN
   */
  start(parent: TaskRow, lease: Lease, request: ChildRequest): Promise<TaskRow> {
    if (request.count > MAX_CHILDREN)
      return Promise.reject(
        new ServiceError('BAD_USER_INPUT', `A task may start at most ${MAX_CHILDREN} children.`),
      );
    let child: NewChild;
    try {
      const { options } = request;
      const left = parent.expires_at.getTime() - Date.now();
      const prepared = prepareStart(
        { kinds: this.kinds, retention: this.retention },
        ownerActor(parent.owner),
        {
          kind: request.kind,
          input: request.input,
          ttlMs: Math.min(options.ttlMs ?? left, left),
          priority: options.priority ?? null,
          labels: options.labels,
          retry: options.retry ?? null,
          concurrencyKey: options.concurrencyKey ?? null,
          concurrencyLimit: options.concurrencyLimit ?? null,
          rateLimitKey: options.rateLimitKey ?? null,
          rateLimit: options.rateLimit ?? null,
        },
      );
      child = { name: request.name, position: request.position, task: prepared.task };
    } catch (err) {
      return Promise.reject(err);
    }
    return new Promise((resolve, reject) => {
      let queue = this.queues.get(parent.id);
      if (!queue) {
        queue = { lease, queued: [] };
        this.queues.set(parent.id, queue);
        // The calls of this turn go together.
        setImmediate(() => void this.flush(parent.id));
      }
      queue.queued.push({ child, resolve, reject });
    });
  }

  private async flush(parentId: string): Promise<void> {
    const queue = this.queues.get(parentId);
    this.queues.delete(parentId);
    if (!queue) return;
    for (let i = 0; i < queue.queued.length; i += BATCH) {
      const batch = queue.queued.slice(i, i + BATCH);
      try {
        const rows = await startChildren(
          this.db,
          parentId,
          queue.lease,
          batch.map((q) => q.child),
        );
        for (const q of batch) {
          const row = rows.get(q.child.name);
          if (row) q.resolve(row);
          else
            q.reject(
              new ServiceError(
                'BAD_USER_INPUT',
                `Child ${JSON.stringify(q.child.name)} was not started: the task is no longer held by this run, or has ${MAX_CHILDREN} children.`,
              ),
            );
        }
      } catch (err) {
        for (const q of batch) q.reject(err);
      }
    }
  }
}

/** The journal entry `startChildren` wrote for `child`, as the run keeps it in memory. */
export function childEntry(
  parentId: string,
  name: string,
  position: number,
  child: TaskRow,
): StepRow {
  return {
    task_id: parentId,
    name,
    position,
    state: 'COMPLETED',
    attempts: 1,
    started_at: child.created_at,
    ended_at: child.created_at,
    wake_at: null,
    child_id: child.id,
    child_status: null,
    signal_url: null,
    wait_schema: null,
    result: null,
    error: null,
  };
}
