import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ServiceError } from '../../../src/errors.js';
import type { Actor, StartRequest } from '../../../src/tasks/service.js';
import { startTestApp, type TestApp } from '../../helpers/app.js';
import { hold } from '../../helpers/kinds.js';

/**
 * Single starts that arrive while one is in flight are written together in one transaction
 * (src/tasks/start-coalescer.ts). The service is called directly, so that the starts reach
 * it in one tick: the first is written alone, the rest wait for it and share a transaction.
 * Rows written by one transaction share its `xmin`; ROLE=api, so that no claim rewrites them.
 */

let t: TestApp;
const alice: Actor = { id: 'alice', admin: false };

beforeAll(async () => {
  t = await startTestApp({ env: { ROLE: 'api', WEBHOOK_ALLOW_PRIVATE: 'true' }, kinds: [hold] });
});
afterAll(() => t?.stop());

/** Starts every request in the same tick; settles each as its caller would see it. */
function together(requests: StartRequest[]) {
  return Promise.allSettled(requests.map((request) => t.app.tasks.start(alice, request)));
}

function fulfilled<T>(result: PromiseSettledResult<T>): T {
  if (result.status === 'rejected') throw result.reason;
  return result.value;
}

/** The transaction that wrote each task. */
async function writers(ids: string[]): Promise<Map<string, string>> {
  const { rows } = await sql<{ id: string; xmin: string }>`
    select id, xmin::text as xmin from tasks where id = any(${ids}::uuid[])`.execute(
    t.app.db.kysely,
  );
  return new Map(rows.map((row) => [row.id, row.xmin]));
}

describe('starts in flight together', () => {
  it('answers each of concurrent starts with its own outcome, in one transaction', async () => {
    const used = await t.app.tasks.start(alice, {
      kind: 'hold',
      input: { n: 2 },
      idempotencyKey: 'taken',
    });
    const results = await together([
      { kind: 'hold', input: { first: true } },
      { kind: 'hold', input: { n: 1 }, idempotencyKey: 'twice' },
      { kind: 'hold', input: { n: 1 }, idempotencyKey: 'twice' },
      { kind: 'hold', input: { n: 1 }, idempotencyKey: 'taken' },
      { kind: 'hold', input: { hooked: true }, webhook: { url: 'http://127.0.0.1:9/hook' } },
      { kind: 'hold', input: { last: true } },
    ]);
    const [first, once, again, reused, hooked, last] = results;

    expect(fulfilled(first!).created).toBe(true);
    // The same key twice in one transaction: as if one after the other.
    expect(fulfilled(once!).created).toBe(true);
    expect(fulfilled(again!).created).toBe(false);
    expect(fulfilled(again!).task.id).toBe(fulfilled(once!).task.id);
    // A refused entry refuses itself only.
    expect(reused!.status).toBe('rejected');
    const refusal = (reused as PromiseRejectedResult).reason;
    expect(refusal).toBeInstanceOf(ServiceError);
    expect((refusal as ServiceError).code).toBe('IDEMPOTENCY_KEY_REUSED');
    // The webhook attached at start is stored with its task, and its first delivery.
    const hookedId = fulfilled(hooked!).task.id;
    const hooks = await t.app.db.kysely
      .selectFrom('task_webhooks')
      .innerJoin('task_deliveries', 'task_deliveries.webhook_id', 'task_webhooks.id')
      .select(['url', 'version'])
      .where('task_webhooks.task_id', '=', hookedId)
      .execute();
    expect(hooks).toEqual([{ url: 'http://127.0.0.1:9/hook', version: 1 }]);

    // The first went alone; the others, waiting for it, shared one commit.
    const ids = [first, once, hooked, last].map((r) => fulfilled(r!).task.id);
    const by = await writers([...ids, used.task.id]);
    expect(by.size).toBe(5);
    const [alone, ...batched] = ids.map((id) => by.get(id));
    expect(new Set(batched).size).toBe(1);
    expect(batched[0]).not.toBe(alone);
  });

  it('writes starts with nothing to settle alone in one statement, whoever their owners', async () => {
    const bob: Actor = { id: 'bob', admin: false };
    const requests: Array<[Actor, StartRequest]> = [
      [alice, { kind: 'hold', input: { n: 0 } }],
      [alice, { kind: 'hold', input: { n: 1 }, labels: { team: 'a' } }],
      [bob, { kind: 'hold', input: { n: 2 } }],
      [alice, { kind: 'hold', input: { n: 3 }, labels: { team: 'b' } }],
    ];
    const started = await Promise.all(
      requests.map(([actor, request]) => t.app.tasks.start(actor, request)),
    );
    expect(started.map((s) => [s.created, s.task.owner, s.task.input])).toEqual([
      [true, 'alice', { n: 0 }],
      [true, 'alice', { n: 1 }],
      [true, 'bob', { n: 2 }],
      [true, 'alice', { n: 3 }],
    ]);
    const ids = started.map((s) => s.task.id);
    // Rows one statement wrote share its transaction (xmin) and its command (cmin).
    const { rows } = await sql<{ id: string; writer: string }>`
      select id, xmin::text || '/' || cmin::text as writer from tasks
      where id = any(${ids}::uuid[])`.execute(t.app.db.kysely);
    const writer = new Map(rows.map((row) => [row.id, row.writer]));
    const [alone, ...batched] = ids.map((id) => writer.get(id));
    expect(new Set(batched).size).toBe(1);
    expect(batched[0]).not.toBe(alone);
    // Stored as a start alone stores it: its owner's, with its label rows.
    const labels = await t.app.db.kysely
      .selectFrom('task_labels')
      .select(['task_id', 'owner', 'key', 'value'])
      .where('task_id', 'in', ids)
      .orderBy('value')
      .execute();
    expect(labels).toEqual([
      { task_id: ids[1], owner: 'alice', key: 'team', value: 'a' },
      { task_id: ids[3], owner: 'alice', key: 'team', value: 'b' },
    ]);
    expect(await t.app.tasks.get(bob, ids[2]!)).toMatchObject({ id: ids[2], owner: 'bob' });
  });

  it('writes keyed starts together in one statement, a key met twice as one request after another', async () => {
    const [first, a, b, again] = (
      await together([
        { kind: 'hold', input: { keyed: 0 } },
        { kind: 'hold', input: { keyed: 1 }, idempotencyKey: 'run-a' },
        { kind: 'hold', input: { keyed: 2 }, idempotencyKey: 'run-b' },
        { kind: 'hold', input: { keyed: 1 }, idempotencyKey: 'run-a' },
      ])
    ).map((result) => fulfilled(result));
    expect([a, b, again].map((s) => s!.created)).toEqual([true, true, false]);
    expect(again!.task.id).toBe(a!.task.id);
    const { rows } = await sql<{ id: string; writer: string }>`
      select id, xmin::text || '/' || cmin::text as writer from tasks
      where id = any(${[first!.task.id, a!.task.id, b!.task.id]}::uuid[])`.execute(t.app.db.kysely);
    const writer = new Map(rows.map((row) => [row.id, row.writer]));
    expect(writer.get(a!.task.id)).toBe(writer.get(b!.task.id));
    expect(writer.get(first!.task.id)).not.toBe(writer.get(a!.task.id));
  });

  it('writes each entry alone when a statement of their transaction fails', async () => {
    // A real failure of one entry's statement: a trigger refusing one input.
    await sql`create function refuse_boom() returns trigger language plpgsql as $$
      begin
        if new.input ? 'boom' then raise exception 'boom refused'; end if;
        return new;
      end $$`.execute(t.app.db.kysely);
    await sql`create trigger refuse_boom before insert on tasks
      for each row execute function refuse_boom()`.execute(t.app.db.kysely);
    try {
      const [first, before, boom, after] = await together([
        { kind: 'hold', input: { alone: true } },
        { kind: 'hold', input: { before: true } },
        { kind: 'hold', input: { boom: true } },
        { kind: 'hold', input: { after: true } },
      ]);
      expect(boom!.status).toBe('rejected');
      expect(String((boom as PromiseRejectedResult).reason)).toContain('boom refused');
      const ids = [first, before, after].map((r) => fulfilled(r!).task.id);
      const by = await writers(ids);
      expect(by.size).toBe(3);
      // Rolled back together, then each written by a transaction of its own.
      expect(new Set(by.values()).size).toBe(3);
      const { rows } = await sql<{ n: number }>`
        select count(*)::int as n from tasks where input ? 'boom'`.execute(t.app.db.kysely);
      expect(rows[0]!.n).toBe(0);
    } finally {
      await sql`drop trigger refuse_boom on tasks`.execute(t.app.db.kysely);
    }
  });
});
