import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { Database, TaskRow } from '../db/types.js';
import { ServiceError, notFound } from './errors.js';
import type { TaskEvents } from './events.js';
import { validateAgainst, type KindRegistry, type TaskKind } from './kinds.js';
import { isTerminal, type TaskStatus } from './status.js';
import { answerTask, cancelTask, findTask, insertTask, listTasks } from './store.js';
import { subscribeToTask } from './subscription.js';
import { toTask, visible, type Task } from './task.js';

/** Who is asking, as the domain needs it: the faces turn tokens and scopes into this. */
export interface Actor {
  id: string;
  /** Sees and cancels anyone's tasks (never their payloads: that is the faces' rule). */
  admin: boolean;
}

export interface StartRequest {
  kind: string;
  input?: unknown;
  ttlMs?: number | null;
  idempotencyKey?: string | null;
}

export interface ListRequest {
  first?: number | null;
  after?: string | null;
  statuses?: readonly TaskStatus[] | null;
  /** Admins only: whose tasks to list. Default: the caller's own. */
  owner?: string | null;
}

export interface TaskPage {
  tasks: Task[];
  hasNextPage: boolean;
}

export interface RetentionPolicy {
  defaultTtlMs: number;
  minTtlMs: number;
  maxTtlMs: number;
}

export const MAX_PAGE_SIZE = 100;
export const DEFAULT_PAGE_SIZE = 20;
/** Largest accepted `input` or answer, as JSON text. */
export const MAX_PAYLOAD_BYTES = 256 * 1024;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const IDEMPOTENCY_KEY = /^[\x20-\x7e]{1,255}$/;
const INPUT_KEY = /^[\x21-\x7e]{1,255}$/;

/** Whether `id` has the shape of a taskId (says nothing of whether such a task exists). */
export function isTaskId(id: string): boolean {
  return UUID.test(id);
}

function checkId(id: string): string {
  if (!isTaskId(id)) throw new ServiceError('BAD_USER_INPUT', 'Malformed task id: expected a UUID.');
  return id.toLowerCase();
}

function checkPayload(value: unknown, what: string): void {
  const text = JSON.stringify(value ?? null);
  if (Buffer.byteLength(text) > MAX_PAYLOAD_BYTES) {
    throw new ServiceError('BAD_USER_INPUT', `${what} is larger than ${MAX_PAYLOAD_BYTES} bytes.`);
  }
  // jsonb cannot hold U+0000, which JSON.stringify writes as \u0000 (after an even number of backslashes).
  if (/(?<!\\)(?:\\\\)*\\u0000/.test(text)) {
    throw new ServiceError('BAD_USER_INPUT', `${what} contains the character U+0000, which cannot be stored.`);
  }
}

export function encodeCursor(task: Pick<Task, 'createdAt' | 'id'>): string {
  return Buffer.from(`${task.createdAt.toISOString()}|${task.id}`).toString('base64url');
}

function decodeCursor(cursor: string): { createdAt: Date; id: string } {
  const [at, id] = Buffer.from(cursor, 'base64url').toString().split('|');
  const createdAt = new Date(at ?? '');
  if (!id || !UUID.test(id) || Number.isNaN(createdAt.getTime())) {
    throw new ServiceError('BAD_USER_INPUT', 'Malformed cursor.');
  }
  return { createdAt, id };
}

/**
 * The task operations both faces use. Every call is scoped to its actor: another principal's
 * task reads exactly like an unknown id. Each operation writes one audit line.
 */
export class TaskService {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly events: TaskEvents,
    private readonly kinds: KindRegistry,
    private readonly retention: RetentionPolicy,
    private readonly log: Logger,
  ) {}

  listKinds(): TaskKind[] {
    return this.kinds.list();
  }

  private scope(actor: Actor): string | null {
    return actor.admin ? null : actor.id;
  }

  /** The one audit line of a task operation; `principal` is null without a valid token. */
  private audit(principal: string | null, operation: string, taskId: string | null, outcome: string): void {
    this.log.info({ audit: true, principal, operation, taskId, outcome }, 'task operation');
  }

  /**
   * Audits an operation a face refused before calling the service: no valid token
   * (`principal` null) or a missing scope. Same line as every other task operation; `taskId`
   * is kept only when it has the shape of one.
   */
  refused(principal: string | null, operation: string, taskId: string | null, outcome: 'UNAUTHENTICATED' | 'FORBIDDEN'): void {
    this.audit(principal, operation, taskId !== null && isTaskId(taskId) ? taskId.toLowerCase() : null, outcome);
  }

  private async audited<T>(actor: Actor, operation: string, taskId: string | null, run: () => Promise<T>, describe: (value: T) => [string | null, string]): Promise<T> {
    try {
      const value = await run();
      const [id, outcome] = describe(value);
      this.audit(actor.id, operation, id ?? taskId, outcome);
      return value;
    } catch (err) {
      this.audit(actor.id, operation, taskId, err instanceof ServiceError ? err.code : 'error');
      throw err;
    }
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
    return this.audited(actor, 'startTask', null, async () => {
      const kind = this.kinds.require(request.kind);
      const input = request.input ?? {};
      checkPayload(input, 'input');
      validateAgainst(kind.inputSchema, input, `input of kind ${kind.name}`);
      const key = request.idempotencyKey ?? null;
      if (key !== null && !IDEMPOTENCY_KEY.test(key)) {
        throw new ServiceError('BAD_USER_INPUT', 'idempotencyKey must be 1 to 255 printable ASCII characters.');
      }
      if (request.ttlMs != null && !Number.isFinite(request.ttlMs)) throw new ServiceError('BAD_USER_INPUT', 'ttlMs must be a number.');
      const outcome = await insertTask(this.db, {
        id: randomUUID(),
        owner: actor.id,
        kind: kind.name,
        input,
        ttlMs: this.clampTtl(request.ttlMs, kind.ttlMs),
        pollIntervalMs: kind.pollIntervalMs,
        maxAttempts: kind.maxAttempts,
        timeoutMs: kind.timeoutMs,
        idempotencyKey: key,
      });
      if (!outcome.created && !outcome.sameRequest) {
        throw new ServiceError('IDEMPOTENCY_KEY_REUSED', 'This idempotency key was used before with another kind or input.');
      }
      return { task: toTask(outcome.row), created: outcome.created };
    }, ({ task, created }) => [task.id, created ? 'created' : 'replayed']);
  }

  /** `null`: unknown, expired, or not the actor's. */
  get(actor: Actor, id: string): Promise<Task | null> {
    return this.audited(actor, 'task', id, async () => {
      // From the event-stream-checked cache: an unchanged task costs no query.
      const row = await this.events.read(checkId(id));
      return visible(row, this.scope(actor)) ? toTask(row) : null;
    }, (task) => [null, task ? 'ok' : 'not_found']);
  }

  list(actor: Actor, request: ListRequest = {}): Promise<TaskPage> {
    return this.audited(actor, 'tasks', null, async () => {
      const first = request.first ?? DEFAULT_PAGE_SIZE;
      if (!Number.isInteger(first) || first < 1 || first > MAX_PAGE_SIZE) {
        throw new ServiceError('BAD_USER_INPUT', `first must be between 1 and ${MAX_PAGE_SIZE}.`);
      }
      if (request.owner != null && request.owner !== actor.id && !actor.admin) {
        throw new ServiceError('FORBIDDEN', 'Only admins may list the tasks of another principal.');
      }
      const { rows, hasNextPage } = await listTasks(this.db, {
        owner: request.owner ?? actor.id,
        statuses: request.statuses ?? null,
        first,
        after: request.after ? decodeCursor(request.after) : null,
      });
      return { tasks: rows.map((row) => toTask(row)), hasNextPage };
    }, (page) => [null, `ok:${page.tasks.length}`]);
  }

  /** Cancels an active task; a cancelled one is returned unchanged; a finished one is TASK_TERMINAL. */
  cancel(actor: Actor, id: string): Promise<Task> {
    return this.audited(actor, 'cancelTask', id, async () => {
      const taskId = checkId(id);
      const owner = this.scope(actor);
      const changed = await cancelTask(this.db, taskId, owner);
      if (changed) {
        this.events.committed(changed.id, changed.version);
        return { task: toTask(changed), changed: true };
      }
      // Nothing changed: the task is unknown, gone, or already final — and final never changes back.
      const row = await findTask(this.db, taskId, owner);
      if (!row) throw notFound();
      if (row.status === 'cancelled') return { task: toTask(row), changed: false };
      throw new ServiceError('TASK_TERMINAL', `The task is already ${row.status}.`);
    }, ({ changed }) => [null, changed ? 'cancelled' : 'already_cancelled']).then(({ task }) => task);
  }

  /** Answers the task's pending input request. Only the owner may answer. */
  provideInput(actor: Actor, id: string, key: string, value: unknown): Promise<Task> {
    return this.audited(actor, 'provideTaskInput', id, async () => {
      const taskId = checkId(id);
      if (!INPUT_KEY.test(key)) throw new ServiceError('BAD_USER_INPUT', 'Malformed input key.');
      checkPayload(value, 'value');
      const row = await findTask(this.db, taskId, actor.id);
      if (!row) throw notFound();
      this.checkAwaiting(row, key);
      const schema = (row.input_request as { schema?: Record<string, unknown> } | null)?.schema;
      if (schema) validateAgainst(schema, value, `value for ${key}`);
      const changed = await answerTask(this.db, taskId, actor.id, key, value);
      if (changed) {
        this.events.committed(changed.id, changed.version);
        return toTask(changed);
      }
      // The task moved on between the read and the write: say why, from what it is now.
      const now = await findTask(this.db, taskId, actor.id);
      if (!now) throw notFound();
      this.checkAwaiting(now, key);
      throw new ServiceError('NOT_AWAITING_INPUT', 'The task is no longer waiting for this input.');
    }, () => [null, 'answered']);
  }

  private checkAwaiting(row: TaskRow, key: string): void {
    const status = row.status as TaskStatus;
    if (isTerminal(status)) throw new ServiceError('TASK_TERMINAL', `The task is already ${status}.`);
    const pending = (row.input_request as { key?: string } | null)?.key;
    if (status !== 'input_required' || pending !== key) {
      throw new ServiceError(
        'NOT_AWAITING_INPUT',
        status === 'input_required' ? `The task is waiting for input ${JSON.stringify(pending)}, not ${JSON.stringify(key)}.` : 'The task is not waiting for input.',
      );
    }
  }

  /**
   * The task's current state, then every later version in increasing order; ends after the
   * final state, or when the task expires or is deleted, or at `until` (epoch ms).
   * @throws ServiceError NOT_FOUND, before anything is sent, for a task the actor cannot see
   */
  subscribe(actor: Actor, id: string, until?: number): Promise<AsyncIterableIterator<Task>> {
    return this.audited(actor, 'taskUpdated', id, () => subscribeToTask(this.events, checkId(id), this.scope(actor), until), () => [null, 'subscribed']);
  }
}
