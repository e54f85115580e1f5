import type { TaskFilter } from './filter.js';
import type { TaskStatus } from './status.js';
import type { Task } from './task.js';
import type { WebhookRequest } from './webhooks.js';

/** What the faces hand the task service, and what it answers besides tasks. */

/** Who is asking, as the domain needs it: the faces turn tokens and scopes into this. */
export interface Actor {
  id: string;
  /** Sees and cancels anyone's tasks (never their payloads: that is the faces' rule). */
  admin: boolean;
}

export interface StartRequest {
  kind: string;
  input?: unknown;
  ttlMs?: number | null;
  idempotencyKey?: string | null;
  /** Status changes pushed to a URL (DESIGN §11); ignored on an idempotent replay. */
  webhook?: WebhookRequest | null;
  /** DESIGN §15: checked by `checkLabels`. */
  labels?: unknown;
}

export interface ListRequest {
  first?: number | null;
  after?: string | null;
  statuses?: readonly TaskStatus[] | null;
  /** Admins only: whose tasks to list. Default: the caller's own. */
  owner?: string | null;
  /** DESIGN §15; its `owner`, if any, counts as the one above. */
  filter?: TaskFilter | null;
}

/** What `cancelTasks` did (DESIGN §15). */
export interface CancelManyResult {
  /** The actor's (or named owner's) tasks the filter matched, terminal ones included. */
  matched: number;
  /** Those this call cancelled, each CANCELLED before the answer. */
  cancelled: number;
}

/** Most entries one `startTasks` call may carry. */
export const MAX_BATCH_SIZE = 100;

export interface TaskPage {
  tasks: Task[];
  hasNextPage: boolean;
  /** The opaque cursor of the page's last task, for `after`; null on an empty page. */
  endCursor: string | null;
}

export interface RetentionPolicy {
  defaultTtlMs: number;
  minTtlMs: number;
  maxTtlMs: number;
}

export const MAX_PAGE_SIZE = 100;
export const DEFAULT_PAGE_SIZE = 20;
