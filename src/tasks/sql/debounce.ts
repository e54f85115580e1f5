import { type RawBuilder, sql } from 'kysely';
import type { Executor } from '../../db/types.js';
import type { Debounce } from '../debounce.js';
import { insertLabelRows } from './common.js';

/**
 * DESIGN §17 debounce in the store. A burst is open while its task has not started: the unique
 * index `tasks_debounce_open` (migration 0013) holds one open task per owner, kind and key, and
 * the trigger there closes it when a worker first takes the task. The start's insert names
 * that index as its arbiter, so Postgres decides, under the row's lock, whether a start joins
 * the open task or begins a new burst: a start that meets the claim holding the task waits for
 * the claim to commit, then finds the burst closed and inserts a new task. No start is answered
 * with a task whose run misses its input, and no burst ever has two unstarted tasks.
 */

/**
 * The `on conflict` of a debounced start, the existing row as `x` and the start's as
 * `excluded`: the open task takes the start's input and labels, is due `delayMs` from now
 * (capped by the tightest maxDelayMs of the burst, from its first start), lives at least the
 * start's ttlMs from now, and counts a version. Everything else (priority, concurrency key and
 * limit, retry, webhooks) stays as the burst's first start set it. A task that expired
 * unstarted is not joined (nothing returned; see {@link releaseExpiredBurst}).
 *
 * Retention is counted from created_at, as every retention is, and never past
 * TASK_MAX_TTL_MS: a burst whose starts keep coming with no maxDelayMs runs at the latest
 * `delayMs` before that bound, so its last input runs rather than expires.
 */
export function joinOpenBurst({ delayMs, maxTtlMs }: Debounce): RawBuilder<unknown> {
  const ms = sql`interval '1 millisecond'`;
  const runAt = sql`least(excluded.run_at,
    x.created_at + least(x.debounce_max_delay_ms, excluded.debounce_max_delay_ms) * ${ms},
    x.created_at + ${maxTtlMs - delayMs}::int * ${ms})`;
  const ttl = sql`least(${maxTtlMs}::int, greatest(x.ttl_ms,
    (extract(epoch from excluded.expires_at - x.created_at) * 1000)::bigint))::int`;
  return sql`
  on conflict (owner, kind, debounce_key) where debounce_key is not null and status = 'working'
  do update set
    input = excluded.input,
    labels = excluded.labels,
    run_at = ${runAt},
    -- held for its time while that is ahead; a task due already keeps what held it otherwise
    hold = case when ${runAt} > excluded.created_at then 'time'
                when x.hold = 'time' then null else x.hold end,
    debounce_max_delay_ms = least(x.debounce_max_delay_ms, excluded.debounce_max_delay_ms),
    ttl_ms = ${ttl},
    expires_at = x.created_at + ${ttl} * ${ms},
    version = x.version + 1,
    last_updated_at = excluded.created_at
  where x.expires_at > excluded.created_at`;
}

/**
 * The label rows (migrations/0005_labels.sql) of the task `t` a debounced start wrote: a new
 * task's are inserted; a joined one's that its new labels drop are deleted and the rest kept
 * (the two sets are disjoint, so the order in which the CTEs run does not matter).
 */
export function labelsReplaced(startedId: string): RawBuilder<unknown> {
  return sql`l0 as (
    delete from task_labels tl using t
    where tl.task_id = t.id and t.id <> ${startedId}::uuid
      and not t.labels @> jsonb_build_object(tl.key, tl.value)
  ), l as (${insertLabelRows} on conflict do nothing)`;
}

/**
 * Lets go of the burst whose task expired before it started: the task is gone (DESIGN §4), so
 * the next start of its key begins a new burst. The purge deletes the row as any other.
 */
export async function releaseExpiredBurst(
  db: Executor,
  owner: string,
  kind: string,
  key: string,
): Promise<void> {
  await sql`
    update tasks set debounce_key = null
    where owner = ${owner} and kind = ${kind} and debounce_key = ${key} and status = 'working'
      and expires_at <= now()`.execute(db);
}
