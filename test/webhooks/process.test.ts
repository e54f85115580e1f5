import { type Kysely, sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../../src/db/types.js';
import { purgeExpired } from '../../src/tasks/purge.js';
import { claimDeliveries, finishDelivery } from '../../src/tasks/webhooks/deliveries.js';
import { eventually, startTestApp } from '../helpers/app.js';
import { backend, freshDatabase, kyselyOn, type TestDatabase } from '../helpers/db.js';
import { gqlAt, type ServerProcess, spawnServer, spawnServersInto } from '../helpers/process.js';
import { type Receiver, startReceiver, verify } from '../helpers/receiver.js';
import { readWriteToken } from '../helpers/secret.js';

/**
 * Webhook delivery across processes and stops (DESIGN §11): Postgres only, where processes
 * share a database.
 */

const START = `mutation($input: StartTaskInput!) { startTask(input: $input) { id } }`;
const VIEW = `query($id: ID!) { task(id: $id) { webhooks { secret } deliveries { id version state attempts lastStatusCode } } }`;

async function deliveryRows(db: Kysely<Database>, taskId: string) {
  return db
    .selectFrom('task_deliveries')
    .select(['id', 'version', 'state', 'attempts', 'worker_id', 'lease_expires_at'])
    .where('task_id', '=', taskId)
    .orderBy('version')
    .execute();
}

describe.skipIf(backend !== 'pg')('webhooks across processes (Postgres)', () => {
  let database: TestDatabase;
  let db: Kysely<Database>;
  const processes: ServerProcess[] = [];
  const receivers: Receiver[] = [];
  beforeAll(async () => {
    database = await freshDatabase();
    db = kyselyOn(database, 4);
  });
  afterAll(async () => {
    await Promise.all(processes.map((p) => p.stop('SIGKILL')));
    await Promise.all(receivers.map((r) => r.close()));
    await db?.destroy();
    await database?.drop();
  });

  it('delivers later from another process what a worker SIGKILLed mid-attempt was sending', async () => {
    let down = true;
    const r = await startReceiver(() => (down ? undefined : 200)); // down: takes it, never answers
    receivers.push(r);
    const env = {
      WEBHOOK_ALLOW_PRIVATE: 'true',
      WEBHOOK_TIMEOUT_MS: '1000',
      WEBHOOK_RETRY_SCHEDULE_MS: '100',
    };
    const [api, first] = await spawnServersInto(
      processes,
      { role: 'api', databaseUrl: database.url!, env },
      { role: 'worker', databaseUrl: database.url!, env },
    );
    const alice = await readWriteToken();
    const started = await gqlAt(
      api.url,
      START,
      { input: { kind: 'sleep', input: { ms: 0 }, webhook: { url: r.url } } },
      alice,
    );
    const taskId = started.data.startTask.id as string;
    const [request] = await r.waitFor(1);
    await first.stop('SIGKILL');
    const [held] = await deliveryRows(db, taskId);
    expect(held).toMatchObject({ version: 1, state: 'pending', attempts: 1 });
    expect(held!.lease_expires_at).not.toBeNull();

    down = false;
    const second = await spawnServer({ role: 'worker', databaseUrl: database.url!, env });
    processes.push(second);
    // Once the dead worker's lease (WEBHOOK_TIMEOUT_MS + 5 s) lapses, the second one sends it.
    const again = await eventually(
      async () => r.received.find((g, i) => i > 0 && g.json.version === 1),
      30_000,
    );
    expect(again.headers['webhook-id']).toBe(request!.headers['webhook-id']);
    const view = await gqlAt(api.url, VIEW, { id: taskId }, alice);
    const secret = view.data.task.webhooks[0].secret;
    expect(() => verify(secret, again)).not.toThrow();
    const delivered = await eventually(async () => {
      const rows = await deliveryRows(db, taskId);
      return rows[0]?.state === 'delivered' ? rows[0] : undefined;
    });
    expect(delivered.attempts).toBe(2);
    // Log lines are written in batches (every 100 ms at the latest): wait for the attempt's.
    await eventually(async () =>
      second.logs().some((l) => l.msg === 'webhook attempt' && l.deliveryId === held!.id)
        ? true
        : undefined,
    );
    await Promise.all([api.stop(), second.stop()]);
  }, 120_000);

  it('lets the purge skip a task whose delivery a worker holds, instead of waiting on it', async () => {
    const t = await startTestApp({
      database,
      env: { ROLE: 'api', WEBHOOK_ALLOW_PRIVATE: 'true' },
    });
    try {
      const alice = await t.token('alice');
      const res = await t.gql(
        START,
        { input: { kind: 'sleep', input: { ms: 0 }, webhook: { url: 'http://127.0.0.1:9/' } } },
        alice,
      );
      const taskId = res.data.startTask.id as string;
      await sql`update tasks set expires_at = now() + interval '2 seconds' where id = ${taskId}::uuid`.execute(
        db,
      );
      // A worker's claim, held open in a transaction of its own: the delivery row is locked.
      await db.connection().execute(async (holder) => {
        await sql`begin`.execute(holder);
        const lockedClaim = await claimDeliveries(holder, 'holder', 10, 60_000);
        expect(lockedClaim.map((c) => c.task_id)).toContain(taskId);
        await sql`update tasks set expires_at = now() - interval '1 second' where id = ${taskId}::uuid`.execute(
          db,
        );
        // A purge that waited on the lock would hang here.
        const deleted = await Promise.race([
          purgeExpired(db),
          new Promise<never>((_, reject) =>
            setTimeout(() => reject(new Error('the purge waited on a held delivery')), 10_000),
          ),
        ]);
        expect(deleted).toBe(0);
        // The holder records its outcome and lets go; the next purge deletes the task and both rows.
        const claim = lockedClaim.find((c) => c.task_id === taskId)!;
        expect(
          await finishDelivery(holder, 'holder', claim, { kind: 'delivered', statusCode: 200 }),
        ).toBe(true);
        await sql`commit`.execute(holder);
      });
      expect(await purgeExpired(db)).toBeGreaterThanOrEqual(1);
      expect(await deliveryRows(db, taskId)).toEqual([]);
    } finally {
      await t.stop();
    }
  });

  it('on a graceful stop, lets an attempt in flight finish within the grace, and gives back one past it uncounted', async () => {
    const answers: Array<() => void> = [];
    const r = await startReceiver((req, _n, res) => {
      // Hold every answer until the test releases it.
      answers.push(() => {
        if (!res.headersSent && !res.destroyed) res.writeHead(200).end();
      });
      return req.path === '/hook' ? 'handled' : 404;
    });
    receivers.push(r);
    const env = { WEBHOOK_ALLOW_PRIVATE: 'true', TASK_SHUTDOWN_GRACE_MS: '60000' };
    const t = await startTestApp({ database, env });
    const alice = await t.token('alice');
    const res = await t.gql(
      START,
      { input: { kind: 'approval', input: { question: 'q' }, webhook: { url: r.url } } },
      alice,
    );
    const taskId = res.data.startTask.id as string;
    await r.waitFor(1);
    const stopping = t.app.stop();
    answers[0]!(); // answered during the grace: delivered, not released
    await stopping;
    const rows = await deliveryRows(db, taskId);
    expect(rows[0]).toMatchObject({ version: 1, state: 'delivered', attempts: 1 });

    // Past the grace: aborted and released, its attempt not counted.
    const short = await startTestApp({
      database,
      env: { WEBHOOK_ALLOW_PRIVATE: 'true', TASK_SHUTDOWN_GRACE_MS: '50' },
    });
    const pending = await eventually(async () => {
      const now = await deliveryRows(db, taskId);
      return now.find((d) => d.version === 2 && d.worker_id !== null);
    });
    expect(pending.state).toBe('pending');
    await short.app.stop();
    const released = (await deliveryRows(db, taskId)).find((d) => d.version === 2)!;
    expect(released).toMatchObject({
      state: 'pending',
      attempts: 0,
      worker_id: null,
      lease_expires_at: null,
    });
    for (const answer of answers) answer();
  });
});
