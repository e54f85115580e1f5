/** The token scopes of DESIGN §2. */
export const SCOPES = {
  read: 'tasks:read',
  write: 'tasks:write',
  admin: 'tasks:admin',
} as const;
export type Scope = (typeof SCOPES)[keyof typeof SCOPES];
export const ALL_SCOPES: Scope[] = Object.values(SCOPES);

/**
 * The scope each task operation needs (DESIGN §2, §9, §10): the one table every face asks,
 * through `TaskService.gate.authorize`. The keys are the operations' names in the audit trail.
 */
export const SCOPE_OF = {
  startTask: SCOPES.write,
  cancelTask: SCOPES.write,
  provideTaskInput: SCOPES.write,
  attachWebhook: SCOPES.write,
  detachWebhook: SCOPES.write,
  // DESIGN §15.
  startTasks: SCOPES.write,
  cancelTasks: SCOPES.write,
  retryTask: SCOPES.write,
  // DESIGN §16.
  signalTask: SCOPES.write,
  task: SCOPES.read,
  tasks: SCOPES.read,
  taskUpdated: SCOPES.read,
  tasksUpdated: SCOPES.read,
  webhooks: SCOPES.read,
  // DESIGN §17: a schedule is read as its tasks are, and changed as they are started.
  upsertSchedule: SCOPES.write,
  deleteSchedule: SCOPES.write,
  pauseSchedule: SCOPES.write,
  triggerSchedule: SCOPES.write,
  schedule: SCOPES.read,
  schedules: SCOPES.read,
} as const satisfies Record<string, Scope>;

/** A task operation that needs a scope. */
export type Operation = keyof typeof SCOPE_OF;
