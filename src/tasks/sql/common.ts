import { type RawBuilder, sql } from 'kysely';
import type { TaskRow } from '../../db/types.js';
import { coerceError } from '../../errors.js';

/** Channel carrying `id:version` after every change to a task (DESIGN §4). */
export const TASK_CHANNEL = 'taskhandle_task';
/** Channel carrying a kind name whenever a task becomes claimable. */
export const READY_CHANNEL = 'taskhandle_ready';

/** A value bound as jsonb. pg would send a JS array as a Postgres array, so JSON is sent as text. */
export function json(value: unknown): RawBuilder<unknown> {
  return sql`${jsonText(value)}::jsonb`;
}

/**
 * The JSON text of a value to store (`null` for undefined).
 * @throws TypeError, with the original as `cause`, for what JSON cannot express (a BigInt, a
 *   cycle, a getter or `toJSON` that throws): the same write would fail again
 */
export function jsonText(value: unknown): string | null {
  try {
    return value === undefined ? null : (JSON.stringify(value) ?? null);
  } catch (thrown) {
    throw new TypeError(coerceError(thrown).message, { cause: thrown });
  }
}

/** The notify expression for a row `t` just changed, evaluated in the statement that changed it. */
export const notifyChanged = sql`pg_notify(${TASK_CHANNEL}, t.id::text || ':' || t.version::text)`;
export const notifyReady = sql`pg_notify(${READY_CHANNEL}, t.kind)`;

/**
 * A changed row without the columns its statement added: `notified`/`ready` for pg_notify,
 * `deliveries`/`delivery_due` for a webhook attached in the same statement.
 */
export function withoutNotifyColumns(row: TaskRow | undefined): TaskRow | undefined {
  if (!row) return undefined;
  const {
    notified: _n,
    ready: _r,
    deliveries: _d,
    delivery_due: _due,
    ...rest
  } = row as TaskRow & Record<string, unknown>;
  return rest as TaskRow;
}

/**
 * The label rows a label filter walks (migrations/0005_labels.sql) of the tasks a statement's
 * CTE `t` returns: every start writes them so.
 */
export const insertLabelRows = sql`insert into task_labels (owner, key, value, created_at, task_id)
    select t.owner, e.key, e.value, t.created_at, t.id from t, jsonb_each_text(t.labels) e`;
