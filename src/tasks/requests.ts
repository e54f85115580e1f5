import type { TaskFilter } from './filter.js';
import type { RetryPolicy } from './retry.js';
import type { TaskStatus } from './status.js';
import type { Task } from './task.js';
import type { WebhookRequest } from './webhooks/rules.js';

/** What the faces hand the task service, and what it answers besides tasks. */

/** Who is asking, as the domain needs it: the faces turn tokens and scopes into this. */
export interface Actor {
  id: string;
  /** Sees and cancels anyone's tasks (never their payloads: that is the faces' rule). */
  admin: boolean;
  /** The token's scopes, which `TaskService.gate.authorize` checks; absent inside the process. */
  scopes?: ReadonlySet<string>;
}

/**
 * The owner `id` as an actor without admin powers: how the process acts for an owner (a
 * schedule's occurrence, a parent's child, a webhook's view of its own task) and how a caller
 * whose token grants no admin power is seen.
 */
export function ownerActor(id: string): Actor {
  return { id, admin: false };
}

export interface StartRequest {
  kind: string;
  input?: unknown;
  ttlMs?: number | null;
  idempotencyKey?: string | null;
  /** Status changes pushed to a URL (DESIGN §11); ignored on an idempotent replay. */
  webhook?: WebhookRequest | null;
  /** Not before this instant (DESIGN §14); a Date (the faces parse the text). */
  runAt?: Date | null;
  /** Or: not before now + delayMs. */
  delayMs?: number | null;
  /** -100..100; higher is claimed first. @default 0 */
  priority?: number | null;
  /** Groups tasks of a kind for their concurrency limit. @default the owner */
  concurrencyKey?: string | null;
  /** 1..1000: at most this many tasks of the kind and key run at once. @default the kind's */
  concurrencyLimit?: number | null;
  /** DESIGN §17: groups tasks of a kind for their rate limit (1..255 printable). @default the owner */
  rateLimitKey?: string | null;
  /** At most `limit` first starts of the kind and key in any sliding `periodMs`. @default the kind's */
  rateLimit?: { limit?: unknown; periodMs?: unknown } | null;
  /** Overrides the kind's retry policy, field by field. */
  retry?: Partial<Record<keyof RetryPolicy, number | null>> | null;
  /** DESIGN §15: checked by `checkLabels`. */
  labels?: unknown;
  /** DESIGN §17: joins the key's task that has not started yet (`checkDebounce`). */
  debounce?: DebounceRequest | null;
}

/** A start's debounce, as a face hands it over (checked by `checkDebounce`). */
export interface DebounceRequest {
  /** 1..128 printable characters; one open burst per owner, kind and key. */
  key: string;
  /** 0..86 400 000: the task runs this long after the burst's latest start... */
  delayMs: number;
  /** ...but at most this long after its first start (delayMs..86 400 000). @default no bound */
  maxDelayMs?: number | null | undefined;
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
