import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { Database, Executor } from '../db/types.js';
import { answerInput } from './answer.js';
import { cancelMatching, cancelOne } from './cancel.js';
import type { TaskEvents } from './events/hub.js';
import type { TaskFilter } from './filter.js';
import { Gate } from './gate.js';
import type { KindRegistry, TaskKind } from './kinds.js';
import { listFor } from './listing.js';
import type { RateLimiter } from './rate-limit.js';
import { listRecent, type RecentPage, type RecentRequest } from './recent.js';
import type {
  Actor,
  CancelManyResult,
  ListRequest,
  RetentionPolicy,
  StartRequest,
  TaskPage,
} from './requests.js';
import { retryTask } from './rerun.js';
import { prepareStart, type StartContext, startBatch, writeStart } from './start.js';
import { type RunsHere, StartsHere } from './start-here.js';
import { TaskJournals } from './steps/journals.js';
import { TaskSubscriptions } from './subscriptions.js';
import { type Task, toTask, visible } from './task.js';
import { TaskTree } from './tree.js';
import { checkId } from './validation.js';
import type { WebhookRequest } from './webhooks/rules.js';
import { TaskWebhooks } from './webhooks/task-webhooks.js';

/** The request and answer shapes live beside the service; importers keep this path. */
export * from './requests.js';

/** What the task service works with. */
export interface TaskServiceOptions {
  db: Kysely<Database>;
  events: TaskEvents;
  kinds: KindRegistry;
  retention: RetentionPolicy;
  log: Logger;
  /** Whether webhooks may point at private addresses. @default { allowPrivate: false } */
  webhookPolicy?: { allowPrivate: boolean };
  /** Per principal and process (DESIGN §12). @default none */
  rateLimiter?: RateLimiter;
  /**
   * This process's runner, when it runs tasks as well as serving requests: a task started
   * here, of a kind it runs, is inserted already leased to it and runs at once when it has a
   * slot free (see `StartsHere`).
   */
  runner?: RunsHere | undefined;
}

/**
 * The task operations every face uses. Every call is scoped to its actor: another principal's
 * task reads exactly like an unknown id. Each operation writes one audit line.
 */
export class TaskService {
  /** A task's webhooks after start (DESIGN §11), for the faces. */
  readonly webhooks: TaskWebhooks;
  /** A task's journal: its steps and the signals sent to it (DESIGN §16), for the faces. */
  readonly journals: TaskJournals;
  /** A task's changes, or all of an owner's, as they happen (DESIGN §4), for the faces. */
  readonly subscriptions: TaskSubscriptions;
  /** A task's children (DESIGN §16 `Task.children`), for the faces. */
  readonly tree: TaskTree;
  /**
   * Scope, rate limit and audit line of every operation; the faces ask it at their door
   * (`authorize` before reading a body, `refused` for a request without a valid token).
   */
  readonly gate: Gate;
  private readonly starts: StartsHere;
  private readonly db: Kysely<Database>;
  private readonly events: TaskEvents;
  private readonly kinds: KindRegistry;
  private readonly retention: RetentionPolicy;

  constructor(options: TaskServiceOptions) {
    const { db, events, log } = options;
    this.db = db;
    this.events = events;
    this.kinds = options.kinds;
    this.retention = options.retention;
    this.gate = new Gate(log, options.rateLimiter);
    this.webhooks = new TaskWebhooks(db, options.webhookPolicy?.allowPrivate ?? false);
    this.starts = new StartsHere(db, events, options.runner);
    this.journals = new TaskJournals(db, events, this.gate);
    this.subscriptions = new TaskSubscriptions(events, this.gate, log);
    this.tree = new TaskTree(db, this.gate, (actor, request) => this.list(actor, request));
  }

  listKinds(): TaskKind[] {
    return this.kinds.list();
  }

  private scope(actor: Actor): string | null {
    return actor.admin ? null : actor.id;
  }

  /**
   * Validates and stores a task, committed before this returns; the work starts in a worker.
   * @returns the task and whether this call created it (false: an idempotent replay, or a
   *   debounced start that joined its key's open burst, DESIGN §17)
   */
  start(actor: Actor, request: StartRequest): Promise<{ task: Task; created: boolean }> {
    return this.gate.around(
      actor,
      'startTask',
      null,
      () => this.starts.store(prepareStart(this.startContext(), actor, request)),
      ({ task, created, joined }) => [
        task.id,
        created ? 'created' : joined ? 'debounced' : 'replayed',
      ],
    );
  }

  /**
   * Checks a start request as `start` does and stores nothing: a schedule (DESIGN §17) checks
   * the tasks its occurrences will start when it is saved.
   * @throws ServiceError BAD_USER_INPUT naming the field at fault
   */
  checkStart(actor: Actor, request: StartRequest): void {
    prepareStart(this.startContext(), actor, request);
  }

  /**
   * Starts a task as `start` does, with `scheduleKey` set, on `db`: a transaction of the
   * caller's, which commits the task with its own writes (a schedule moves on to its next
   * occurrence in the commit that starts this one). No request asked for it, so it is
   * neither audited nor rate limited. A task already stored under the request's idempotency
   * key is returned as it is, whatever it was started with.
   * @returns the task, and whether this call created it
   */
  async startWithin(
    db: Executor,
    actor: Actor,
    request: StartRequest,
    scheduleKey: string,
  ): Promise<{ task: Task; created: boolean }> {
    const entry = prepareStart(this.startContext(), actor, request);
    const outcome = await writeStart(db, { ...entry, task: { ...entry.task, scheduleKey } });
    return { task: toTask(outcome.row), created: outcome.created };
  }

  private startContext(): StartContext {
    return { kinds: this.kinds, retention: this.retention, webhooks: this.webhooks };
  }

  /** `null`: unknown, expired, or not the actor's. */
  get(actor: Actor, id: string): Promise<Task | null> {
    return this.gate.around(
      actor,
      'task',
      id,
      // From the event-stream-checked cache: an unchanged task costs no query.
      () => this.related(actor, id),
      (task) => [null, task ? 'ok' : 'not_found'],
    );
  }

  /**
   * `get` without its own audit line and rate limit: a task named by what the actor has
   * just read through an operation that had both (a schedule's last task, in a list of them).
   */
  async related(actor: Actor, id: string): Promise<Task | null> {
    const row = await this.events.read(checkId(id));
    return visible(row, this.scope(actor)) ? toTask(row) : null;
  }

  list(actor: Actor, request: ListRequest = {}): Promise<TaskPage> {
    return this.gate.around(
      actor,
      'tasks',
      null,
      () => listFor(this.db, actor, request),
      (page) => [null, `ok:${page.tasks.length}`],
    );
  }

  /** The actor's own tasks, most recently updated first, with their count (A2A's ListTasks). */
  listRecent(actor: Actor, request: RecentRequest): Promise<RecentPage> {
    return this.gate.around(
      actor,
      'tasks',
      null,
      () => listRecent(this.db, actor.id, request),
      (page) => [null, `ok:${page.tasks.length}`],
    );
  }

  /** Cancels an active task; a cancelled one is returned unchanged; a finished one is TASK_TERMINAL. */
  cancel(actor: Actor, id: string): Promise<Task> {
    return this.gate
      .around(
        actor,
        'cancelTask',
        id,
        () => cancelOne(this.db, this.events, this.scope(actor), id),
        ({ changed }) => [null, changed ? 'cancelled' : 'already_cancelled'],
      )
      .then(({ task }) => task);
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
    return this.gate.around(
      actor,
      'provideTaskInput',
      id,
      () =>
        answerInput(
          { db: this.db, events: this.events, webhooks: this.webhooks },
          actor,
          id,
          key,
          value,
          webhook,
        ),
      () => [null, 'answered'],
    );
  }

  /**
   * Starts up to MAX_BATCH_SIZE tasks in one transaction: every entry is checked before any
   * is stored, and a refused entry (named by its 0-based index) stores nothing. Each entry's
   * idempotency key is honoured as by `start`, within the batch too.
   */
  startMany(actor: Actor, requests: readonly StartRequest[]): Promise<Task[]> {
    return this.gate.around(
      actor,
      'startTasks',
      null,
      async () => {
        const tasks = await startBatch(this.db, this.startContext(), actor, requests);
        // An entry that joined a debounce burst changed a task this process may have cached.
        for (const task of tasks) this.events.committed(task.id, task.version);
        return tasks;
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
    return this.gate
      .around(
        actor,
        'cancelTasks',
        null,
        () => cancelMatching(this.db, this.events, actor, filter),
        ({ matched, cancelled, owner, filter }) => [
          null,
          'cancelled',
          { owner, filter, matched, cancelled },
        ],
      )
      .then(({ matched, cancelled }) => ({ matched, cancelled }));
  }

  /**
   * Starts a FAILED or CANCELLED task of the actor again as a new task linked by `retryOf`
   * (same kind, input and labels, a fresh retention); the old one stays as it was. With
   * `fromStep` (DESIGN §16), the new task starts with the old one's journal up to, not
   * including, that step, in the order the steps first ran: it re-runs from there.
   * @throws ServiceError TASK_NOT_RETRYABLE for a task still active, or completed;
   *   BAD_USER_INPUT for a `fromStep` not in the journal
   */
  retry(actor: Actor, id: string, options: { fromStep?: string | null } = {}): Promise<Task> {
    return this.gate.around(
      actor,
      'retryTask',
      id,
      () => retryTask(this.db, this.kinds, actor, id, options.fromStep ?? null),
      (task) => [task.id, 'created'],
    );
  }
}

/** Rows one bulk-cancel statement may lock at most. */
export { CANCEL_BATCH_SIZE } from './cancel.js';
