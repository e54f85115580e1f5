import { randomUUID } from 'node:crypto';
import type { Executor, TaskRow } from '../db/types.js';
import { ServiceError } from '../errors.js';
import { currentTraceParent } from '../tracing/tracer.js';
import { checkDebounce } from './debounce.js';
import { type KindRegistry, validateAgainst } from './kinds.js';
import { resolveManagedWork } from './managed.js';
import { type Actor, MAX_BATCH_SIZE, type RetentionPolicy, type StartRequest } from './requests.js';
import { type InsertLease, type InsertOutcome, insertTask, type NewTask } from './sql/insert.js';
import { insertTasks } from './sql/insert-many.js';
import { type Task, toTask } from './task.js';
import { checkIdempotencyKey, checkLabels, checkPayload } from './validation.js';
import { attachedAtStart, type NewWebhook } from './webhooks/store.js';
import type { TaskWebhooks } from './webhooks/task-webhooks.js';

/** The stored form of a start request, checked: what `storeStart` writes. */
export interface PreparedStart {
  task: NewTask;
  webhook: NewWebhook | null;
  /** Inserted already leased to this process's runner, which runs it at once (`StartsHere`). */
  lease?: InsertLease;
}

/**
 * What preparing a start request reads: the kinds, the retention bounds, the webhook checks
 * (none for a child task, which has no webhook).
 */
export interface StartContext {
  kinds: KindRegistry;
  retention: RetentionPolicy;
  webhooks?: TaskWebhooks;
}

/** The retention a task gets: asked, else its kind's, else the default, within the bounds. */
export function clampTtl(
  retention: RetentionPolicy,
  ttlMs: number | null | undefined,
  kindTtl: number | undefined,
): number {
  const { defaultTtlMs, minTtlMs, maxTtlMs } = retention;
  const wanted = ttlMs ?? kindTtl ?? defaultTtlMs;
  return Math.min(maxTtlMs, Math.max(minTtlMs, Math.trunc(wanted)));
}

/** Every check of a start request, and the row it will store; touches no database. */
export function prepareStart(
  { kinds, retention, webhooks }: StartContext,
  actor: Actor,
  request: StartRequest,
): PreparedStart {
  const kind = kinds.require(request.kind);
  const input = request.input ?? {};
  checkPayload(input, 'input');
  validateAgainst(kind.inputSchema, input, `input of kind ${kind.name}`);
  const key = checkIdempotencyKey(request.idempotencyKey ?? null);
  if (request.ttlMs != null && !Number.isFinite(request.ttlMs))
    throw new ServiceError('BAD_USER_INPUT', 'ttlMs must be a number.');
  const ttlMs = clampTtl(retention, request.ttlMs, kind.ttlMs);
  // Before the §14 fields: its refusal of runAt and delayMs says why they do not combine.
  const debounce = checkDebounce(request, ttlMs, retention.maxTtlMs);
  const now = Date.now();
  const managed = resolveManagedWork(request, kind, retention.maxTtlMs, now, now + ttlMs);
  const labels = checkLabels(request.labels);
  const webhook = request.webhook == null || !webhooks ? null : webhooks.prepare(request.webhook);
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
      debounce,
      retryOf: null,
      // Its attempts and deliveries continue the trace of the request starting it (DESIGN §13).
      traceParent: currentTraceParent(),
    },
    webhook,
  };
}

/** What storing a start answers: the task, and whether this call created it. */
export interface StoredStart {
  task: Task;
  created: boolean;
  /** DESIGN §17: the start joined its debounce key's open burst; `task` is that burst's. */
  joined: boolean;
  /** The row as stored (leased, when the insert was the claim). */
  row: TaskRow;
}

/** Stores a prepared task on `db` (the process's pool, or a batch's transaction). */
export async function storeStart(db: Executor, entry: PreparedStart): Promise<StoredStart> {
  return answerStart(await writeStart(db, entry));
}

/**
 * Writes a prepared task on `db`; a refusal is left to {@link answerStart}, so that a
 * transaction writing several starts goes on past one whose key was used for other input.
 */
export function writeStart(
  db: Executor,
  { task, webhook, lease }: PreparedStart,
): Promise<InsertOutcome> {
  // With a webhook, the task, the webhook and its first delivery commit in one statement.
  return insertTask(db, task, webhook ? attachedAtStart(webhook, task.id) : undefined, lease);
}

/**
 * The answer to a written start.
 * @throws ServiceError IDEMPOTENCY_KEY_REUSED when the key's task has another kind or input
 */
export function answerStart(outcome: InsertOutcome): StoredStart {
  if (!outcome.created && !outcome.sameRequest) {
    throw new ServiceError(
      'IDEMPOTENCY_KEY_REUSED',
      'This idempotency key was used before with another kind or input.',
    );
  }
  const { row, created } = outcome;
  const joined = !outcome.created && outcome.joined === true;
  // A task inserted leased is answered as accepted, before its first run (`attempt` 0), as it
  // would be had a claim followed the insert; the claim changes no version either.
  const accepted =
    created && row.worker_id !== null
      ? { ...row, attempt: 0, worker_id: null, lease_expires_at: null }
      : row;
  return { task: toTask(accepted), created, joined, row };
}

/**
 * Starts up to MAX_BATCH_SIZE tasks in one transaction: every entry is checked before any
 * is stored, and a refused entry (named by its 0-based index) stores nothing. The entries are
 * stored in order, as many at a time as one statement can ({@link writeInRuns}), so that each
 * answers exactly as it would have in a batch of one, in its place.
 */
export async function startBatch(
  db: Executor,
  context: StartContext,
  actor: Actor,
  requests: readonly StartRequest[],
): Promise<Task[]> {
  if (!Array.isArray(requests) || requests.length === 0 || requests.length > MAX_BATCH_SIZE)
    throw new ServiceError(
      'BAD_USER_INPUT',
      `A batch holds 1 to ${MAX_BATCH_SIZE} tasks; start more in several calls.`,
    );
  const prepared = requests.map((request, index) =>
    atEntry(index, () => prepareStart(context, actor, request)),
  );
  // Without keys, webhooks or debounces nothing can be refused or settled alone: the one statement is the
  // whole batch, and needs no transaction around it (two round trips fewer).
  if (
    prepared.every(
      (entry) => !entry.webhook && entry.task.idempotencyKey === null && !entry.task.debounce,
    )
  ) {
    const stored = await insertTasks(
      db,
      prepared.map((entry) => entry.task),
    );
    return prepared.map(
      (entry) => answerStart({ created: true, row: stored.get(entry.task.id)! }).task,
    );
  }
  return db.transaction().execute(async (trx) => {
    // Debounced entries join their bursts one at a time, in key order (see writeOrder).
    if (prepared.some((entry) => entry.task.debounce)) {
      const tasks: Task[] = [];
      for (const index of writeOrder(prepared))
        tasks[index] = (await atEntry(index, () => storeStart(trx, prepared[index]!))).task;
      return tasks;
    }
    const outcomes = await writeInRuns(trx, prepared);
    return outcomes.map((outcome, index) => atEntry(index, () => answerStart(outcome)).task);
  });
}

/**
 * Writes prepared starts on `trx` in order and as many at a time as one statement can
 * (`insertTasks`): a run of entries without a webhook, a lease or a debounce goes in one
 * statement; an entry with one, or one whose idempotency key found a task already stored, is
 * written alone (`writeStart`) in its place, so that each outcome is what it would be had the
 * entries been written one after the other. `trx` is a transaction, but for entries that make
 * one run without keys: their one statement stores them all. Refusals are left to `answerStart`.
 */
export async function writeInRuns(
  trx: Executor,
  entries: readonly PreparedStart[],
): Promise<InsertOutcome[]> {
  const outcomes: InsertOutcome[] = [];
  for (let from = 0; from < entries.length; ) {
    if (!inRun(entries[from]!)) {
      outcomes.push(await writeStart(trx, entries[from]!));
      from++;
      continue;
    }
    let to = from;
    while (to < entries.length && inRun(entries[to]!)) to++;
    const run = entries.slice(from, to);
    const stored = await insertTasks(
      trx,
      run.map((entry) => entry.task),
    );
    for (const entry of run) {
      const row = stored.get(entry.task.id);
      outcomes.push(row ? { created: true, row } : await writeStart(trx, entry));
    }
    from = to;
  }
  return outcomes;
}

/** A start `insertTasks` can write: no webhook, no lease, no debounce. */
export function inRun({ task, webhook, lease }: PreparedStart): boolean {
  return !webhook && !lease && !task.debounce;
}

/**
 * The order a batch writes its entries in: debounced ones by kind and key (DESIGN §17), so that
 * two batches joining the same bursts lock their tasks in one order and never wait on each
 * other in a cycle; the rest, and the starts of one burst (the last input wins), as given.
 */
function writeOrder(entries: readonly PreparedStart[]): number[] {
  const burst = (index: number) => {
    const { kind, debounce } = entries[index]!.task;
    return debounce ? `${kind}\u001f${debounce.key}` : '';
  };
  return entries
    .map((_, index) => index)
    .sort((a, b) => (burst(a) < burst(b) ? -1 : burst(a) > burst(b) ? 1 : 0));
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
