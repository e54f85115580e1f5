import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { Database } from '../../db/types.js';
import type { TaskEvents } from '../events/hub.js';
import type { KindRegistry } from '../kinds.js';
import type { TaskObserver } from '../observer.js';
import type { RetentionPolicy } from '../requests.js';

/** What a runner is built with (`Runner`); the app makes it from the Config. */
export interface RunnerOptions {
  db: Kysely<Database>;
  events: TaskEvents;
  kinds: KindRegistry;
  log: Logger;
  workerId: string;
  /** Handlers running at once; tasks waiting for input do not count. */
  concurrency: number;
  /**
   * Tasks claimed ahead of free slots, leased and kept in memory until a slot frees (see
   * `LocalQueue`). Under a backlog it grows (see `Prefetch`). 0 claims only for free
   * slots. @default 3 × concurrency, at most 1 000
   */
  prefetch?: number;
  leaseMs: number;
  /** Claim pass that runs even when no NOTIFY arrives. @default min(2000, leaseMs / 3) */
  backstopMs?: number;
  /** Least time between two progress writes of one task. @default 100 */
  progressThrottleMs?: number;
  /** Told of claims, runs and lost leases (metrics). */
  observer?: TaskObserver;
  /**
   * The retention bounds a handler's child tasks are started with (DESIGN §16).
   * @default TASK_*_TTL_MS's defaults
   */
  retention?: RetentionPolicy;
  /** Where signal URLs point (PUBLIC_URL, else the listening address). @default http://127.0.0.1:4000 */
  publicUrl?: () => string;
  /**
   * How a claim orders the tasks of one priority (RUNNER_FAIRNESS, DESIGN §17): `owner` takes
   * owners in turn, `fifo` the earliest due first. @default 'owner'
   */
  fairness?: 'owner' | 'fifo';
}

/** The retention bounds of child tasks when none are given: TASK_*_TTL_MS's defaults. */
export const DEFAULT_RETENTION: RetentionPolicy = {
  defaultTtlMs: 3_600_000,
  minTtlMs: 1_000,
  maxTtlMs: 604_800_000,
};
