import { once } from 'node:events';
import type pg from 'pg';
import { TASK_CHANNEL } from '../../src/tasks/sql/common.js';

/**
 * What `read` returns once it is not undefined, read at once and again each time a task
 * changes: `client` LISTENs to the notification every write to a task sends (TASK_CHANNEL),
 * so the wait is on the event, not a clock. Undefined if nothing fits within `timeoutMs`.
 * Postgres only; `client` stays listening (its owner ends it).
 */
export async function onTaskChange<T>(
  client: pg.Client,
  read: () => Promise<T | undefined>,
  timeoutMs: number,
): Promise<T | undefined> {
  await client.query(`listen ${TASK_CHANNEL}`);
  let changed = false;
  const onNotification = () => {
    changed = true;
  };
  client.on('notification', onNotification);
  const signal = AbortSignal.timeout(timeoutMs);
  try {
    for (;;) {
      changed = false;
      const value = await read();
      if (value !== undefined) return value;
      // A change announced while reading is read again at once.
      if (!changed) await once(client, 'notification', { signal });
    }
  } catch (err) {
    if (signal.aborted) return undefined;
    throw err;
  } finally {
    client.off('notification', onNotification);
  }
}
