/** The package: build a server with your own kinds. */
export { type App, type AppOptions, createApp } from './app.js';
export { type Config, ConfigError, loadConfig } from './config/config.js';
export { builtInKinds } from './kinds/index.js';
export {
  type ChildOptions,
  type ChildTask,
  ChildTaskError,
  defineTaskKind,
  type InputQuestion,
  type OwnTasksRequest,
  type SignalWaitOptions,
  type TaskContext,
  TaskFailedError,
  type TaskKind,
  type TaskKindOptions,
  type TaskSupport,
} from './tasks/kinds.js';
export type { TaskPage } from './tasks/requests.js';
export type { TaskStatus } from './tasks/status.js';
export type { Task } from './tasks/task.js';
