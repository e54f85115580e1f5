import type { TaskStatus } from '../db/types.js';

/**
 * Task statuses as stored and as the REST face spells them (DESIGN §4), and the shapes stored
 * with them; the row types (db/types.ts) declare them, the domain names them from here.
 *
 * `working ⇄ input_required`, and either → a terminal status; terminal statuses never change.
 * The store enforces this in each conditional UPDATE's `where status in (…)`.
 */
export type { InputRequest, TaskFailure, TaskStatus } from '../db/types.js';

export const TASK_STATUSES = [
  'working',
  'input_required',
  'completed',
  'cancelled',
  'failed',
] as const satisfies readonly TaskStatus[];
/** Fails to compile when a stored status is missing from the list above. */
const listsEveryStatus: Exclude<TaskStatus, (typeof TASK_STATUSES)[number]> extends never
  ? true
  : never = true;
void listsEveryStatus;

const TERMINAL_STATUSES: readonly TaskStatus[] = ['completed', 'cancelled', 'failed'];

export function isTerminal(status: TaskStatus): boolean {
  return TERMINAL_STATUSES.includes(status);
}
