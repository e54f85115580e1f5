/** `taskhandle/client`: start tasks on a taskhandle server and follow them to their result. */
export {
  type ClientOptions,
  createClient,
  type KindInfo,
  type ListFilter,
  type StartOptions,
  type TaskhandleClient,
  type TaskList,
} from './client.js';
export { ClientError, TaskCancelled, TaskFailed } from './errors.js';
export { type FollowOptions, TaskHandle } from './handle.js';
export type {
  ClientSchedule,
  OwnerOption,
  ScheduleClient,
  ScheduleInput,
  ScheduleList,
} from './schedules.js';
export type {
  ClientInputRequest,
  ClientStep,
  ClientTask,
  InputOf,
  KindMap,
  KindTypes,
  ResultOf,
  StepState,
  TaskStatus,
} from './task.js';
export type { TokenSource } from './transport.js';
