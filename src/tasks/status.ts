/**
 * Task statuses as stored and as the REST face spells them (DESIGN §4), and the shapes stored
 * with them. Imports nothing, so the row types (db/) and the domain (tasks/) can both use it.
 */
export const TASK_STATUSES = [
  'working',
  'input_required',
  'completed',
  'cancelled',
  'failed',
] as const;
/**
 * `working ⇄ input_required`, and either → a terminal status; terminal statuses never change.
 * The store enforces this in each conditional UPDATE's `where status in (…)`.
 */
export type TaskStatus = (typeof TASK_STATUSES)[number];

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

const TERMINAL_STATUSES: readonly TaskStatus[] = ['completed', 'cancelled', 'failed'];

export function isTerminal(status: TaskStatus): boolean {
  return TERMINAL_STATUSES.includes(status);
}
