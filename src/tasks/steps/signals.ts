import { sql } from 'kysely';
import type { Executor, TaskRow } from '../../db/types.js';
import { notFound, ServiceError } from '../../errors.js';
import { validateAgainst } from '../kinds.js';
import { json, notifyChanged, notifyReady, withoutNotifyColumns } from '../sql/common.js';
import { checkPayload } from '../validation.js';
import { checkStepName } from './names.js';
import { tokenHash } from './signal-urls.js';

/** Who a signal comes from: the task's owner (or an admin), or whoever holds a signal URL. */
export type SignalTarget =
  | { by: 'id'; id: string; name: string; owner: string | null }
  | { by: 'token'; token: string };

/** What a signal did. */
export interface SignalOutcome {
  /** The task as it is after the signal (woken, if it waited for it). */
  row: TaskRow;
  name: string;
  /** False: the same payload was kept before (a repeat, answered as the first). */
  first: boolean;
}

/** A signal URL's token, as minted (`mintSignalToken`): anything else is not looked up. */
const TOKEN = /^[A-Za-z0-9_-]{43}$/;

/**
 * Sends a signal (DESIGN §16) in one transaction. The task row is locked first, as the
 * handler's suspension locks it, so the signal either finds the task suspended on it and wakes
 * it, or is kept and found by the handler when it reaches (or looks again at) its wait: a
 * signal is never lost between the two. The first payload for a name is kept; the same payload
 * again answers as the first did; another is SIGNAL_ALREADY_SENT (by a URL: NOT_FOUND, the URL
 * is used up). A payload that fails the schema of the wait it is meant for is refused and not
 * kept; one sent before the handler reached its wait (the schema unknown yet) is kept, and
 * dropped at the wait if it does not fit there, so the sender may send a good one.
 * @throws ServiceError NOT_FOUND (unknown, expired, not the owner's; by a URL also ended or
 *   used up, the same answer for all), TASK_TERMINAL (by id, a task that ended),
 *   BAD_USER_INPUT, SIGNAL_ALREADY_SENT
 */
export async function sendSignal(
  db: Executor,
  target: SignalTarget,
  payload: unknown,
): Promise<SignalOutcome> {
  checkPayload(payload, 'payload');
  const value = payload ?? null;
  if (target.by === 'id') checkStepName(target.name, 'signal name');
  else if (!TOKEN.test(target.token)) throw notFound('Signal URL');
  return db.transaction().execute(async (trx) => {
    const bound = target.by === 'id' ? target : await byToken(trx, target.token);
    const locked = await sql<TaskRow>`
      select * from tasks
      where id = ${bound.id}::uuid and (${bound.owner}::text is null or owner = ${bound.owner}::text)
        and expires_at > now()
      for no key update`.execute(trx);
    const task = locked.rows[0];
    if (!task) throw target.by === 'id' ? notFound() : notFound('Signal URL');
    if (task.status !== 'working' && task.status !== 'input_required') {
      if (target.by === 'token') throw notFound('Signal URL');
      throw new ServiceError('TASK_TERMINAL', `The task is already ${task.status}.`);
    }
    const name = bound.name;
    const wait = await trx
      .selectFrom('task_steps')
      .select(['state', 'wait_schema'])
      .where('task_id', '=', task.id)
      .where('name', '=', name)
      .executeTakeFirst();
    if (wait?.state === 'WAITING_SIGNAL' && wait.wait_schema)
      validateAgainst(wait.wait_schema as Record<string, unknown>, value, `signal ${name}`);
    const kept = await sql<{ name: string }>`
      insert into task_signals (task_id, name, payload) values (${task.id}::uuid, ${name}, ${json(value)})
      on conflict (task_id, name) do nothing
      returning name`.execute(trx);
    if (kept.rows.length === 0) {
      const same = await sql<{ same: boolean }>`
        select payload = ${json(value)} as same from task_signals
        where task_id = ${task.id}::uuid and name = ${name}`.execute(trx);
      if (same.rows[0]?.same) return { row: task, name, first: false };
      if (target.by === 'token') throw notFound('Signal URL');
      throw new ServiceError(
        'SIGNAL_ALREADY_SENT',
        `The signal ${JSON.stringify(name)} was already sent with another payload.`,
      );
    }
    if (wait?.state !== 'WAITING_SIGNAL') return { row: task, name, first: true };
    // Suspended on it: claimable again now.
    const woken = await sql<TaskRow>`
      with t as (
        update tasks set hold = null, run_at = date_trunc('milliseconds', now()),
               status_message = null, version = version + 1, last_updated_at = now()
        where id = ${task.id}::uuid and status = 'working' and worker_id is null
          and hold in ('wait', 'time')
        returning *
      )
      select t.*, ${notifyChanged} as notified, ${notifyReady} as ready from t`.execute(trx);
    return { row: withoutNotifyColumns(woken.rows[0]) ?? task, name, first: true };
  });
}

async function byToken(
  trx: Executor,
  token: string,
): Promise<{ id: string; name: string; owner: null }> {
  const row = await trx
    .selectFrom('task_signal_tokens')
    .select(['task_id', 'name'])
    .where('token_hash', '=', tokenHash(token))
    .executeTakeFirst();
  if (!row) throw notFound('Signal URL');
  return { id: row.task_id, name: row.name, owner: null };
}
