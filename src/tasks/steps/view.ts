import type { Executor, StepRow, StepState } from '../../db/types.js';
import type { TaskFailure } from '../status.js';

/** A journal entry as the faces show it (DESIGN §16 `TaskStep`). */
export interface TaskStep {
  name: string;
  state: StepState;
  /** Runs of the step's fn (1 for a step that never failed; 0 for a wait not yet ended). */
  attempts: number;
  startedAt: Date;
  endedAt: Date | null;
  /** SLEEPING, or a signal wait with a timeout: when it wakes. */
  wakeAt: Date | null;
  /** A child step's child. */
  childId: string | null;
  /** Owner only (null for anyone else): the URL minted for a signal wait, while it waits. */
  signalUrl: string | null;
  error: TaskFailure | null;
  /** Owner only (null for anyone else), like `Task.result`. */
  result: unknown;
}

/**
 * A journal entry for a viewer: `payloads` when the viewer is the owner (`mayReadPayloads`),
 * who alone reads results and signal URLs; admins see the rest.
 */
export function toTaskStep(row: StepRow, payloads: boolean): TaskStep {
  const error = row.error as (TaskFailure & Record<string, unknown>) | null;
  return {
    name: row.name,
    state: row.state,
    attempts: row.attempts,
    startedAt: row.started_at,
    endedAt: row.ended_at,
    wakeAt: row.state === 'SLEEPING' || row.state === 'WAITING_SIGNAL' ? row.wake_at : null,
    childId: row.child_id,
    signalUrl: payloads && row.state === 'WAITING_SIGNAL' ? row.signal_url : null,
    error: error ? { code: error.code, message: error.message } : null,
    result: payloads ? row.result : null,
  };
}

/** A task's journal, in the order the steps first ran. */
export function listSteps(db: Executor, taskId: string): Promise<StepRow[]> {
  return db
    .selectFrom('task_steps')
    .selectAll()
    .where('task_id', '=', taskId)
    .orderBy('position')
    .orderBy('name')
    .execute();
}

/** Several tasks' journals in one statement, by task id, each as `listSteps` orders it. */
export async function listStepsOf(
  db: Executor,
  taskIds: readonly string[],
): Promise<Map<string, StepRow[]>> {
  const journals = new Map<string, StepRow[]>(taskIds.map((id) => [id, []]));
  if (taskIds.length === 0) return journals;
  const rows = await db
    .selectFrom('task_steps')
    .selectAll()
    .where('task_id', 'in', [...new Set(taskIds)])
    .orderBy('task_id')
    .orderBy('position')
    .orderBy('name')
    .execute();
  for (const row of rows) journals.get(row.task_id)?.push(row);
  return journals;
}
