/** Task statuses as stored and as the REST face spells them (DESIGN §4). */
export const TASK_STATUSES = ['working', 'input_required', 'completed', 'cancelled', 'failed'] as const;
export type TaskStatus = (typeof TASK_STATUSES)[number];

export const TERMINAL_STATUSES: readonly TaskStatus[] = ['completed', 'cancelled', 'failed'];
export const ACTIVE_STATUSES: readonly TaskStatus[] = ['working', 'input_required'];

export function isTerminal(status: TaskStatus): boolean {
  return TERMINAL_STATUSES.includes(status);
}

/**
 * The allowed transitions: `working ⇄ input_required`, and either → a terminal status.
 * Terminal statuses never change. The store enforces this in each conditional UPDATE's
 * `where status in (…)`; this table is the readable statement of it.
 */
export const TRANSITIONS: Readonly<Record<TaskStatus, readonly TaskStatus[]>> = {
  working: ['input_required', 'completed', 'failed', 'cancelled'],
  input_required: ['working', 'failed', 'cancelled'],
  completed: [],
  cancelled: [],
  failed: [],
};

export function canTransition(from: TaskStatus, to: TaskStatus): boolean {
  return TRANSITIONS[from].includes(to);
}
