/** The package: build a server with your own kinds. */
export { createApp, type App, type AppOptions } from './app.js';
export { loadConfig, ConfigError, type Config } from './config.js';
export { defineTaskKind, TaskFailedError, type TaskContext, type TaskKind, type TaskKindOptions } from './tasks/kinds.js';
export { builtInKinds } from './kinds/index.js';
export type { Task } from './tasks/task.js';
export type { TaskStatus } from './tasks/status.js';
