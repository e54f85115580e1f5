import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { Database } from '../../db/types.js';
import type { TaskEvents } from '../events/hub.js';
import type { TaskObserver } from '../observer.js';
import type { ChildStarts } from '../steps/child-starts.js';
import type { OutcomeRecorder } from './outcome.js';
import type { RunningTask } from './running-task.js';

/** What a running task needs from the runner that claimed it. */
export interface RunningTaskOptions {
  db: Kysely<Database>;
  events: TaskEvents;
  log: Logger;
  leaseMs: number;
  progressThrottleMs: number;
  outcomes: OutcomeRecorder;
  /** The runner holding the task, told when its slot frees and when it ends. */
  host: TaskHost;
  /** Told of runs and lost leases (metrics). */
  observer?: TaskObserver | undefined;
  /** Starts the children handlers ask for (DESIGN §16). */
  children: ChildStarts;
  /** Where signal URLs point: PUBLIC_URL, or the address the server listens on. */
  publicUrl(): string;
}

/** The runner as a running task sees it (`Runner` implements it). */
export interface TaskHost {
  /** The task stopped taking a slot: its handler returned (`true`), or it waits for input. */
  slotFreed(task: RunningTask, returned: boolean): void;
  /** The task takes a slot again: its owner's input came and its handler resumes. */
  slotTaken(task: RunningTask): void;
  /** The handler is done and everything the task held is let go. */
  ended(task: RunningTask): void;
  /** The task is due again at `at` (epoch ms): a failed attempt was rescheduled. */
  dueAt(at: number): void;
}
