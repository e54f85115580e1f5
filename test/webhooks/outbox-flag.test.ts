import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { storedColumn } from '../helpers/db.js';

/**
 * The outbox trigger runs only for tasks a webhook was attached to (migration 0018): the flag
 * it reads is set by every attachment, in the attaching transaction, and a status change of a
 * task without one writes nothing. ROLE=api: nothing is delivered, the outbox is only written.
 */

const START = `mutation($input: StartTaskInput!) { startTask(input: $input) { id } }`;
const CANCEL = `mutation($id: ID!) { cancelTask(id: $id) { id status } }`;

describe('webhooks: the outbox written only for tasks with a webhook', () => {
  let t: TestApp;
  let alice: string;
  beforeAll(async () => {
    t = await startTestApp({ env: { ROLE: 'api' } });
    alice = await t.token('alice');
  });
  afterAll(async () => {
    await t?.stop();
  });

  const start = async (webhook?: { url: string }) => {
    const res = await t.gql(
      START,
      { input: { kind: 'approval', input: { question: 'q' }, webhook } },
      alice,
    );
    expect(res.errors).toBeUndefined();
    return res.data.startTask.id as string;
  };
  const cancel = async (id: string) => {
    const res = await t.gql(CANCEL, { id }, alice);
    expect(res.errors).toBeUndefined();
    expect(res.data.cancelTask.status).toBe('CANCELLED');
  };
  const flag = (id: string) => storedColumn(t.app.db.kysely, id, 'has_webhooks');
  const reported = async (id: string) =>
    (
      await t.app.db.kysely
        .selectFrom('task_deliveries')
        .select('status')
        .where('task_id', '=', id)
        .orderBy('version')
        .execute()
    ).map((d) => d.status);

  it('a task started without a webhook is not flagged, and its status changes write no delivery', async () => {
    const id = await start();
    expect(await flag(id)).toBe(false);
    await cancel(id);
    expect(await reported(id)).toEqual([]);
  });

  it('a webhook attached at start flags the task in the start’s statement; its changes are written', async () => {
    const id = await start({ url: 'https://example.com/hook' });
    expect(await flag(id)).toBe(true);
    await cancel(id);
    expect(await reported(id)).toEqual(['working', 'cancelled']);
  });

  it('a webhook attached later, by any statement, flags the task; the next change is written', async () => {
    const id = await start();
    // As every attaching path does: the task's row locked, then the webhook inserted.
    await t.app.db.kysely.transaction().execute(async (trx) => {
      const { rows } = await sql<{ version: number }>`
        select version from tasks where id = ${id}::uuid for no key update`.execute(trx);
      await trx
        .insertInto('task_webhooks')
        .values({
          id: randomUUID(),
          task_id: id,
          url: 'https://example.com/later',
          secret: `whsec_${Buffer.alloc(24, 1).toString('base64')}`,
          after_version: rows[0]!.version,
        })
        .execute();
    });
    expect(await flag(id)).toBe(true);
    await cancel(id);
    expect(await reported(id)).toEqual(['cancelled']);
  });
});
