import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { Database, Executor } from '../db/types.js';
import { notFound, ServiceError } from '../errors.js';
import { AuditLog } from './audit.js';
import { checkAwaiting } from './awaiting.js';
import type { ListPosition } from './cursor.js';
import type { TaskEvents } from './events/hub.js';
import { subscribeToOwner } from './events/owner-subscription.js';
import { subscribeToTask } from './events/subscription.js';
import { checkFilter, isEmptyFilter, type TaskFilter } from './filter.js';
import { type KindRegistry, type TaskKind, validateAgainst } from './kinds.js';
import { listPage } from './listing.js';
import { resolveManagedWork } from './managed.js';
import { RateLimiter } from './rate-limit.js';
import { listRecent, type RecentPage, type RecentRequest } from './recent.js';
import type {
  Actor,
  CancelManyResult,
  ListRequest,
  RetentionPolicy,
  StartRequest,
  TaskPage,
} from './requests.js';
import { DEFAULT_PAGE_SIZE, MAX_BATCH_SIZE, MAX_PAGE_SIZE } from './requests.js';
import { type Operation, SCOPE_OF } from './scopes.js';
import { answerTask } from './sql/answer.js';
import { cancelTask } from './sql/cancel.js';
import { cancelBatch, countMatching } from './sql/cancel-many.js';
import { findVisibleTask } from './sql/find.js';
import { insertTask, type NewTask } from './sql/insert.js';
import { type Task, toTask, visible } from './task.js';
import {
  checkId,
  checkIdempotencyKey,
  checkInputKey,
  checkLabels,
  checkPayload,
} from './validation.js';
import type { WebhookRequest } from './webhooks/rules.js';
import { attachedAtStart, type NewWebhook } from './webhooks/store.js';
import { TaskWebhooks } from './webhooks/task-webhooks.js';

/** The request and answer shapes live beside the service; importers keep this path. */
export * from './requests.js';

/**
 * The task operations every face uses. Every call is scoped to its actor: another principal's
 * task reads exactly like an unknown id. Each operation writes one audit line.
 */
export class TaskService {
  /** A task's webhooks after start (DESIGN §11), for the faces. */
  readonly webhooks: TaskWebhooks;
  private readonly audit: AuditLog;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly events: TaskEvents,
    private readonly kinds: KindRegistry,
    private readonly retention: RetentionPolicy,
    private readonly log: Logger,
    webhookPolicy: { allowPrivate: boolean } = { allowPrivate: false },
    private readonly rateLimiter = new RateLimiter(),
  ) {
    this.audit = new AuditLog(log);
    this.webhooks = new TaskWebhooks(db, webhookPolicy.allowPrivate);
  }

  listKinds(): TaskKind[] {
    return this.kinds.list();
  }

  private scope(actor: Actor): string | null {
    return actor.admin ? null : actor.id;
  }

  /**
   * Refuses, and audits, an actor whose token lacks the scope `operation` needs (`SCOPE_OF`,
   * the one table). The faces ask at their gate, before reading a body; `name` is the
   * operation as the audit trail names it, when the face's method says it better.
   * @throws ServiceError FORBIDDEN naming the scope
   */
  authorize(
    actor: Actor,
    operation: Operation,
    taskId: string | null = null,
    name: string = operation,
  ): void {
    const scope = SCOPE_OF[operation];
    if (actor.scopes?.has(scope)) return;
    this.audit.refused(actor.id, name, taskId, 'FORBIDDEN');
    throw new ServiceError('FORBIDDEN', `The token lacks the ${scope} scope.`, { scope });
  }

  /**
   * Audits an operation refused before the service could ask: no valid token (`principal`
   * null), or a field the GraphQL schema refused. Same line as every other task operation.
   */
  refused(...refusal: Parameters<AuditLog['refused']>): void {
    this.audit.refused(...refusal);
  }

  private audited<T>(
    actor: Actor,
    operation: string,
    taskId: string | null,
    run: () => Promise<T>,
    describe: (value: T) => [string | null, string, Record<string, unknown>?],
  ): Promise<T> {
    const limited = async () => {
      this.rateLimiter.take(actor.id); // RATE_LIMITED, audited like any other refusal
      return run();
    };
    return this.audit.around(actor.id, operation, taskId, limited, describe);
  }

  clampTtl(ttlMs: number | null | undefined, kindTtl: number | undefined): number {
    const { defaultTtlMs, minTtlMs, maxTtlMs } = this.retention;
    const wanted = ttlMs ?? kindTtl ?? defaultTtlMs;
    return Math.min(maxTtlMs, Math.max(minTtlMs, Math.trunc(wanted)));
  }

  /**
   * Validates and stores a task, committed before this returns; the work starts in a worker.
   * @returns the task and whether this call created it (false: an idempotent replay)
   */
  start(actor: Actor, request: StartRequest): Promise<{ task: Task; created: boolean }> {
    return this.audited(
      actor,
      'startTask',
      null,
      () => this.store(this.db, this.prepare(actor, request)),
      ({ task, created }) => [task.id, created ? 'created' : 'replayed'],
    );
  }

  /** Every check of a start request, and the row it will store; touches no database. */
  private prepare(actor: Actor, request: StartRequest): PreparedStart {
    const kind = this.kinds.require(request.kind);
    const input = request.input ?? {};
    checkPayload(input, 'input');
    validateAgainst(kind.inputSchema, input, `input of kind ${kind.name}`);
    const key = checkIdempotencyKey(request.idempotencyKey ?? null);
    if (request.ttlMs != null && !Number.isFinite(request.ttlMs))
      throw new ServiceError('BAD_USER_INPUT', 'ttlMs must be a number.');
    const ttlMs = this.clampTtl(request.ttlMs, kind.ttlMs);
    const now = Date.now();
    const managed = resolveManagedWork(request, kind, this.retention.maxTtlMs, now, now + ttlMs);
    const labels = checkLabels(request.labels);
    const webhook = request.webhook == null ? null : this.webhooks.prepare(request.webhook);
    return {
      task: {
        id: randomUUID(),
        owner: actor.id,
        kind: kind.name,
        input,
        ttlMs,
        pollIntervalMs: kind.pollIntervalMs,
        timeoutMs: kind.timeoutMs,
        idempotencyKey: key,
        ...managed,
        labels,
        retryOf: null,
      },
      webhook,
    };
  }

  /** Stores a prepared task on `db` (the process's pool, or a batch's transaction). */
  private async store(
    db: Executor,
    { task, webhook }: PreparedStart,
  ): Promise<{ task: Task; created: boolean }> {
    // With a webhook, the task, the webhook and its first delivery commit in one statement.
    const outcome = await insertTask(db, task, webhook ? attachedAtStart(webhook) : undefined);
    if (!outcome.created && !outcome.sameRequest) {
      throw new ServiceError(
        'IDEMPOTENCY_KEY_REUSED',
        'This idempotency key was used before with another kind or input.',
      );
    }
    return { task: toTask(outcome.row), created: outcome.created };
  }

  /** `null`: unknown, expired, or not the actor's. */
  get(actor: Actor, id: string): Promise<Task | null> {
    return this.audited(
      actor,
      'task',
      id,
      async () => {
        // From the event-stream-checked cache: an unchanged task costs no query.
        const row = await this.events.read(checkId(id));
        return visible(row, this.scope(actor)) ? toTask(row) : null;
      },
      (task) => [null, task ? 'ok' : 'not_found'],
    );
  }

  list(actor: Actor, request: ListRequest = {}): Promise<TaskPage> {
    return this.audited(
      actor,
      'tasks',
      null,
      async () => {
        const first = request.first ?? DEFAULT_PAGE_SIZE;
        if (!Number.isInteger(first) || first < 1 || first > MAX_PAGE_SIZE) {
          throw new ServiceError('BAD_USER_INPUT', `first must be between 1 and ${MAX_PAGE_SIZE}.`);
        }
        const owner = ownerFor(actor, request.owner ?? request.filter?.owner, 'list');
        return listPage(this.db, owner, {
          first,
          after: request.after,
          statuses: request.statuses,
          filter: checkFilter(request.filter),
        });
      },
      (page) => [null, `ok:${page.tasks.length}`],
    );
  }

  /** The actor's own tasks, most recently updated first, with their count (A2A's ListTasks). */
  listRecent(actor: Actor, request: RecentRequest): Promise<RecentPage> {
    return this.audited(
      actor,
      'tasks',
      null,
      () => listRecent(this.db, actor.id, request),
      (page) => [null, `ok:${page.tasks.length}`],
    );
  }

  /** Cancels an active task; a cancelled one is returned unchanged; a finished one is TASK_TERMINAL. */
  cancel(actor: Actor, id: string): Promise<Task> {
    return this.audited(
      actor,
      'cancelTask',
      id,
      async () => {
        const taskId = checkId(id);
        const owner = this.scope(actor);
        const changed = await cancelTask(this.db, taskId, owner);
        if (changed) {
          this.events.committed(changed.id, changed.version);
          return { task: toTask(changed), changed: true };
        }
        // Nothing changed: the task is unknown, gone, or already final — and final never changes back.
        const row = await findVisibleTask(this.db, taskId, owner);
        if (!row) throw notFound();
        if (row.status === 'cancelled') return { task: toTask(row), changed: false };
        throw new ServiceError('TASK_TERMINAL', `The task is already ${row.status}.`);
      },
      ({ changed }) => [null, changed ? 'cancelled' : 'already_cancelled'],
    ).then(({ task }) => task);
  }

  /**
   * Answers the task's pending input request. Only the owner may answer. A `webhook` given
   * with the answer is attached in the same statement: it reports the answer's change and
   * every later one, and a refused answer keeps none.
   */
  provideInput(
    actor: Actor,
    id: string,
    key: string,
    value: unknown,
    webhook: WebhookRequest | null = null,
  ): Promise<Task> {
    return this.audited(
      actor,
      'provideTaskInput',
      id,
      async () => {
        const taskId = checkId(id);
        checkInputKey(key);
        checkPayload(value, 'value');
        const attach = webhook == null ? null : this.webhooks.prepare(webhook);
        const row = await findVisibleTask(this.db, taskId, actor.id);
        if (!row) throw notFound();
        checkAwaiting(row, key);
        const schema = row.input_request?.schema;
        if (schema) validateAgainst(schema, value, `value for ${key}`);
        const changed = attach
          ? await this.webhooks.answerWith(taskId, actor.id, key, value, attach)
          : await answerTask(this.db, taskId, actor.id, key, value);
        if (changed) {
          this.events.committed(changed.id, changed.version);
          return toTask(changed);
        }
        // The task moved on between the read and the write: say why, from what it is now.
        const now = await findVisibleTask(this.db, taskId, actor.id);
        if (!now) throw notFound();
        checkAwaiting(now, key);
        throw new ServiceError(
          'NOT_AWAITING_INPUT',
          'The task is no longer waiting for this input.',
        );
      },
      () => [null, 'answered'],
    );
  }

  /**
   * Starts up to MAX_BATCH_SIZE tasks in one transaction: every entry is checked before any
   * is stored, and a refused entry (named by its 0-based index) stores nothing. Each entry's
   * idempotency key is honoured as by `start`, within the batch too.
   */
  startMany(actor: Actor, requests: readonly StartRequest[]): Promise<Task[]> {
    return this.audited(
      actor,
      'startTasks',
      null,
      async () => {
        if (!Array.isArray(requests) || requests.length === 0 || requests.length > MAX_BATCH_SIZE)
          throw new ServiceError(
            'BAD_USER_INPUT',
            `A batch holds 1 to ${MAX_BATCH_SIZE} tasks; start more in several calls.`,
          );
        const prepared = requests.map((request, index) =>
          atEntry(index, () => this.prepare(actor, request)),
        );
        return this.db.transaction().execute(async (trx) => {
          const tasks: Task[] = [];
          for (const [index, entry] of prepared.entries())
            tasks.push((await atEntry(index, () => this.store(trx, entry))).task);
          return tasks;
        });
      },
      (tasks) => [null, `ok:${tasks.length}`],
    );
  }

  /**
   * Cancels every active task of the actor (admins: of `filter.owner`) that meets the filter,
   * in batches of CANCEL_BATCH_SIZE, each handler aborted as by `cancel`. Audited once, with
   * the filter and the counts.
   * @throws ServiceError BAD_USER_INPUT for a filter with no condition
   */
  cancelMany(actor: Actor, filter: TaskFilter): Promise<CancelManyResult> {
    return this.audited(
      actor,
      'cancelTasks',
      null,
      async () => {
        const owner = ownerFor(actor, filter?.owner, 'cancel');
        const checked = checkFilter(filter);
        if (isEmptyFilter(checked))
          throw new ServiceError(
            'BAD_USER_INPUT',
            'The filter names no condition; to cancel every task, name the statuses.',
          );
        const matched = await countMatching(this.db, owner, checked);
        let cancelled = 0;
        let after: ListPosition | null = null;
        do {
          const batch = await cancelBatch(this.db, owner, checked, after, CANCEL_BATCH_SIZE);
          for (const { id, version } of batch.cancelled) this.events.committed(id, version);
          cancelled += batch.cancelled.length;
          after = batch.next;
        } while (after);
        return { matched, cancelled, owner, filter: checked };
      },
      ({ matched, cancelled, owner, filter }) => [
        null,
        'cancelled',
        { owner, filter, matched, cancelled },
      ],
    ).then(({ matched, cancelled }) => ({ matched, cancelled }));
  }

  /**
   * Starts a FAILED or CANCELLED task of the actor again as a new task linked by `retryOf`
   * (same kind, input and labels, a fresh retention); the old one stays as it was.
   * @throws ServiceError TASK_NOT_RETRYABLE for a task still active, or completed
   */
  retry(actor: Actor, id: string): Promise<Task> {
    return this.audited(
      actor,
      'retryTask',
      id,
      async () => {
        const row = await findVisibleTask(this.db, checkId(id), actor.id);
        if (!row) throw notFound();
        if (row.status !== 'failed' && row.status !== 'cancelled')
          throw new ServiceError(
            'TASK_NOT_RETRYABLE',
            `The task is ${row.status}; only failed or cancelled tasks can be run again.`,
          );
        const kind = this.kinds.require(row.kind);
        const outcome = await insertTask(this.db, {
          id: randomUUID(),
          owner: row.owner,
          kind: kind.name,
          input: row.input,
          ttlMs: row.ttl_ms,
          pollIntervalMs: kind.pollIntervalMs,
          timeoutMs: kind.timeoutMs,
          idempotencyKey: null,
          labels: row.labels,
          retryOf: row.id,
          // A re-run starts at once, managed as the original was (DESIGN §15).
          runAt: null,
          priority: row.priority,
          concurrencyKey: row.concurrency_key,
          concurrencyLimit: row.concurrency_limit,
          retry: {
            maxAttempts: row.max_attempts,
            initialDelayMs: row.retry_initial_delay_ms,
            factor: row.retry_factor,
            maxDelayMs: row.retry_max_delay_ms,
          },
        });
        return toTask(outcome.row);
      },
      (task) => [task.id, 'created'],
    );
  }

  /**
   * The task's current state, then every later version in increasing order; ends after the
   * final state, or when the task expires or is deleted, or at `until` (epoch ms).
   * @throws ServiceError NOT_FOUND, before anything is sent, for a task the actor cannot see
   */
  subscribe(actor: Actor, id: string, until?: number): Promise<AsyncIterableIterator<Task>> {
    return this.audited(
      actor,
      'taskUpdated',
      id,
      () => subscribeToTask(this.events, checkId(id), this.scope(actor), until),
      () => [null, 'subscribed'],
    );
  }

  /**
   * Every later change of the actor's tasks (admins: of `owner`'s) in version order per task,
   * filtered by status; ends at `until` (epoch ms).
   * @throws ServiceError FORBIDDEN when a non-admin names another principal
   */
  subscribeAll(
    actor: Actor,
    request: Pick<ListRequest, 'statuses' | 'owner' | 'filter'>,
    until?: number,
  ): Promise<AsyncIterableIterator<Task>> {
    return this.audited(
      actor,
      'tasksUpdated',
      null,
      async () => {
        const owner = ownerFor(actor, request.owner ?? request.filter?.owner, 'follow');
        return subscribeToOwner(
          this.events,
          { owner, statuses: request.statuses, filter: checkFilter(request.filter), until },
          this.log,
        );
      },
      () => [null, 'subscribed'],
    );
  }
}

/** The stored form of a start request, checked: what `store` writes. */
interface PreparedStart {
  task: NewTask;
  webhook: NewWebhook | null;
}

/** Rows one bulk-cancel statement may lock at most. */
export const CANCEL_BATCH_SIZE = 250;

/**
 * Whose tasks an operation is about: `named` when it is the actor or the actor is an admin.
 * @throws ServiceError FORBIDDEN when a non-admin names another principal
 */
function ownerFor(actor: Actor, named: string | null | undefined, verb: string): string {
  if (named != null && named !== actor.id && !actor.admin)
    throw new ServiceError('FORBIDDEN', `Only admins may ${verb} the tasks of another principal.`);
  return named ?? actor.id;
}

/** Runs one batch entry's step; a refusal names the entry (`extensions.index`, "entry 37"). */
function atEntry<T>(index: number, step: () => T): T {
  try {
    const value = step();
    if (value instanceof Promise)
      return value.catch((err: unknown) => {
        throw indexed(index, err);
      }) as T;
    return value;
  } catch (err) {
    throw indexed(index, err);
  }
}

function indexed(index: number, err: unknown): unknown {
  if (!(err instanceof ServiceError)) return err;
  return new ServiceError(err.code, `entry ${index}: ${err.message}`, { ...err.details, index });
}
