import type { ColumnType, Kysely, Selectable } from 'kysely';

/**
 * The tables as stored. They stand on their own: the domain (src/tasks/) takes its task
 * statuses and stored shapes from here, never the other way round.
 */

/** A task's status as stored (DESIGN §4); the domain's transitions are in tasks/status.ts. */
export type TaskStatus = 'working' | 'input_required' | 'completed' | 'cancelled' | 'failed';

/** Why a FAILED task failed: stored in `error`, shown to whoever may see the task. */
export interface TaskFailure {
  code: string;
  message: string;
}

/** What an INPUT_REQUIRED task asks its owner: stored in `input_request`, owner only. */
export interface InputRequest {
  key: string;
  message: string;
  /** JSON Schema the answer must satisfy. */
  schema?: Record<string, unknown>;
}

/** A column Postgres fills by default; optional on insert. */
type Defaulted<T> = ColumnType<T, T | undefined, T>;
type Json = unknown;

export interface TasksTable {
  id: string;
  owner: string;
  kind: string;
  status: Defaulted<TaskStatus>;
  status_message: string | null;
  progress: number | null;
  input: Json;
  result: Json;
  error: TaskFailure | null;
  input_request: InputRequest | null;
  /** Every question still unanswered while input_required, in asked order (migration 0007). */
  input_requests: Defaulted<InputRequest[] | null>;
  answers: Defaulted<Record<string, unknown>>;
  version: Defaulted<number>;
  ttl_ms: number;
  expires_at: ColumnType<Date, Date | string, Date | string>;
  poll_interval_ms: number;
  idempotency_key: string | null;
  worker_id: string | null;
  lease_expires_at: ColumnType<Date | null, Date | string | null, Date | string | null>;
  attempt: Defaulted<number>;
  max_attempts: number;
  timeout_ms: number;
  created_at: ColumnType<Date, Date | string | undefined, Date | string>;
  last_updated_at: ColumnType<Date, Date | string | undefined, Date | string>;
  /** Not claimed before this instant (DESIGN §14); `created_at` when started at once. */
  run_at: ColumnType<Date, Date | string | undefined, Date | string>;
  priority: Defaulted<number>;
  concurrency_key: string | null;
  concurrency_limit: number | null;
  retry_initial_delay_ms: Defaulted<number>;
  retry_factor: Defaulted<number>;
  retry_max_delay_ms: Defaulted<number>;
  last_error: TaskFailure | null;
  /**
   * Why an unleased WORKING task is not claimable now: its time (a delay, a backoff, a timed
   * wait), its concurrency key's limit, a wait with no wake-up instant (DESIGN §16, migration
   * 0008), or its rate limit key's window (DESIGN §17, migration 0012).
   */
  hold: 'time' | 'key' | 'wait' | 'rate' | null;
  // DESIGN §17 (migrations/0012_flow_control.sql): as given (null: the owner is the key), and
  // the limit of first starts in a sliding period this task is held to, if any.
  rate_limit_key: Defaulted<string | null>;
  rate_limit: Defaulted<number | null>;
  rate_period_ms: Defaulted<number | null>;
  // DESIGN §15 (migrations/0005_labels.sql).
  labels: Defaulted<Record<string, string>>;
  retry_of: string | null;
  /** DESIGN §13: the W3C traceparent of the start request, when it was traced (0006). */
  trace_parent: string | null;
  /** DESIGN §17: the schedule that started this task, if any (0009). */
  schedule_key: Defaulted<string | null>;
  // DESIGN §16 (migrations/0008_steps.sql).
  parent_id: Defaulted<string | null>;
  journaled: Defaulted<boolean>;
  children_count: Defaulted<number>;
  children_waiting: Defaulted<number>;
  /** Running time this attempt's earlier runs used, for `timeout_ms` (0015). */
  ran_ms: Defaulted<number>;
  // DESIGN §17 (migrations/0013_debounce.sql): set while the task's debounce burst is open.
  debounce_key: Defaulted<string | null>;
  debounce_max_delay_ms: Defaulted<number | null>;
  /** A webhook was attached to it once: its status changes write the outbox (0018). */
  has_webhooks: Defaulted<boolean>;
}

export type TaskRow = Selectable<TasksTable>;

/** A journalled step's state (DESIGN §16), as stored. */
export type StepState =
  | 'RUNNING'
  | 'COMPLETED'
  | 'FAILED'
  | 'SLEEPING'
  | 'WAITING_SIGNAL'
  | 'WAITING_CHILD';

/** One entry of a task's journal: a step, a wait, or a child started. */
export interface TaskStepsTable {
  task_id: string;
  name: string;
  /** The order in which the step first ran, from 1. */
  position: number;
  state: StepState;
  attempts: Defaulted<number>;
  started_at: ColumnType<Date, Date | string | undefined, Date | string>;
  ended_at: NullableTimestamp;
  wake_at: NullableTimestamp;
  child_id: string | null;
  /** The child's final status, once it ended. */
  child_status: TaskStatus | null;
  signal_url: string | null;
  wait_schema: Json;
  result: Json;
  error: Json;
}

/** The first payload of a signal (task, name). */
export interface TaskSignalsTable {
  task_id: string;
  name: string;
  payload: Json;
  received_at: ColumnType<Date, Date | string | undefined, Date | string>;
}

/** A signal URL's token, by its sha256. */
export interface TaskSignalTokensTable {
  token_hash: Buffer;
  task_id: string;
  name: string;
}

export type StepRow = Selectable<TaskStepsTable>;

type NullableTimestamp = ColumnType<Date | null, Date | string | null, Date | string | null>;

/** A URL a task's status changes are pushed to (DESIGN §11). */
export interface TaskWebhooksTable {
  id: string;
  task_id: string;
  url: string;
  secret: string;
  format: Defaulted<'standard' | 'a2a'>;
  token: string | null;
  auth_scheme: string | null;
  auth_credentials: string | null;
  /** A2A: the config id the client proposed (migration 0011); null when it proposed none. */
  config_id: Defaulted<string | null>;
  after_version: number;
  disabled_at: NullableTimestamp;
  created_at: ColumnType<Date, Date | string | undefined, Date | string>;
}

/** One status change to one webhook: the outbox row, written with the change it reports. */
export interface TaskDeliveriesTable {
  id: string;
  task_id: string;
  webhook_id: string;
  version: number;
  status: string;
  snapshot: Json;
  state: Defaulted<'pending' | 'delivered' | 'failed'>;
  attempts: Defaulted<number>;
  next_attempt_at: ColumnType<Date, Date | string | undefined, Date | string>;
  worker_id: string | null;
  lease_expires_at: NullableTimestamp;
  last_status_code: number | null;
  last_error: string | null;
  delivered_at: NullableTimestamp;
  created_at: ColumnType<Date, Date | string | undefined, Date | string>;
}

/** One label of a task, in its owner's newest-first order: what a label filter walks. */
export interface TaskLabelsTable {
  owner: string;
  key: string;
  value: string;
  created_at: ColumnType<Date, Date | string, Date | string>;
  task_id: string;
}

/** A schedule (DESIGN §17, migrations/0009_schedules.sql): one row per owner and key. */
export interface SchedulesTable {
  owner: string;
  key: string;
  cron: string;
  timezone: string;
  kind: string;
  input: Json;
  missed: 'skip' | 'once' | 'all';
  overlap: 'allow' | 'skip';
  paused: boolean;
  priority: number | null;
  labels: Record<string, string> | null;
  retry: Record<string, number | null> | null;
  ttl_ms: number | null;
  concurrency_key: string | null;
  /** The occurrence due next; null while paused. */
  next_run_at: NullableTimestamp;
  last_run_at: NullableTimestamp;
  last_task_id: string | null;
  created_at: ColumnType<Date, Date | string | undefined, Date | string>;
  updated_at: ColumnType<Date, Date | string | undefined, Date | string>;
}

export type ScheduleRow = Selectable<SchedulesTable>;
export type WebhookRow = Selectable<TaskWebhooksTable>;
export type DeliveryRow = Selectable<TaskDeliveriesTable>;

export interface Database {
  tasks: TasksTable;
  task_webhooks: TaskWebhooksTable;
  task_deliveries: TaskDeliveriesTable;
  task_labels: TaskLabelsTable;
  schedules: SchedulesTable;
  task_steps: TaskStepsTable;
  task_signals: TaskSignalsTable;
  task_signal_tokens: TaskSignalTokensTable;
}

/** What a query runs on: the process's Kysely instance or a transaction on it. */
export type Executor = Kysely<Database>;
