import type { ColumnType, Insertable, Selectable, Updateable } from 'kysely';

/** A column Postgres fills by default; optional on insert. */
type Defaulted<T> = ColumnType<T, T | undefined, T>;
type Json = unknown;

export interface TasksTable {
  id: string;
  owner: string;
  kind: string;
  status: Defaulted<string>;
  status_message: string | null;
  progress: number | null;
  input: Json;
  result: Json;
  error: Json;
  input_request: Json;
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
}

export type TaskRow = Selectable<TasksTable>;
export type NewTaskRow = Insertable<TasksTable>;
export type TaskRowUpdate = Updateable<TasksTable>;

export interface Database {
  tasks: TasksTable;
}
