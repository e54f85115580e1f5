import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TaskRow } from '../../src/db/types.js';
import { defineTaskKind } from '../../src/tasks/kinds.js';
import { claimWork } from '../../src/tasks/sql/claim.js';
import { eventually, startTestApp, type TestApp } from '../helpers/app.js';
import { backend } from '../helpers/db.js';

/**
 * Fairness between owners (DESIGN §17): within a priority a claim takes owners in turn, so one
 * owner's backlog delays another owner's first task by at most one claim pass; `fifo` keeps
 * §14's order. The claims are sent here as a runner sends them, on an app that runs no tasks
 * (each case queues a kind of its own), then through a runner with each setting.
 */

// Embedded PGlite writes more slowly; the claim reads the same rows either way.
const BACKLOG = backend === 'pg' ? 20_000 : 3_000;

describe('the claim takes owners in turn', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startTestApp({ env: { ROLE: 'api' } });
  });
  afterAll(() => t?.stop());

  /** Queues `n` ready tasks of `owner` and `kind`, the first the oldest, all older than `ageMs`. */
  async function queue(
    kind: string,
    owner: string,
    n: number,
    { ageMs = 0, priority = 0 }: { ageMs?: number; priority?: number } = {},
  ): Promise<void> {
    await sql`
      insert into tasks (id, owner, kind, ttl_ms, expires_at, poll_interval_ms, max_attempts,
                         timeout_ms, priority, created_at, run_at)
      select gen_random_uuid(), ${owner}, ${kind}, 3600000, now() + interval '1 hour', 1000, 3,
             60000, ${priority}::int, c.at, c.at
      from generate_series(1, ${n}::int) i,
        lateral (select now() - (${ageMs}::int + ${n}::int - i) * interval '1 millisecond' as at) c`.execute(
      t.app.db.kysely,
    );
  }

  const claim = (kind: string, limit: number, fair = true, cursor = '') =>
    claimWork(t.app.db.kysely, 'test-worker', [kind], limit, 60_000, { fair, cursor });
  const owners = (rows: TaskRow[]) => rows.map((r) => r.owner);

  it("claims another owner's first task in the first pass behind one owner's backlog", async () => {
    await queue('backlog', 'big', BACKLOG, { ageMs: 60_000 });
    await queue('backlog', 'small', 1);
    const { rows } = await claim('backlog', 8);
    expect(rows).toHaveLength(8);
    // The owners' first tasks come first, in turn: big's oldest, then small's only one.
    expect(owners(rows)).toEqual(['big', 'small', 'big', 'big', 'big', 'big', 'big', 'big']);
    const big = rows.filter((r) => r.owner === 'big').map((r) => r.run_at.getTime());
    expect(big).toEqual([...big].sort((a, b) => a - b));
  });

  it('with fifo, keeps the oldest first whoever owns it', async () => {
    await queue('fifo', 'big', 50, { ageMs: 60_000 });
    await queue('fifo', 'small', 1);
    const { rows } = await claim('fifo', 8, false);
    expect(owners(rows)).toEqual(Array(8).fill('big'));
    const due = rows.map((r) => r.run_at.getTime());
    expect(due).toEqual([...due].sort((a, b) => a - b));
  });

  it('still takes priority first', async () => {
    await queue('prio', 'big', 20, { ageMs: 60_000 });
    await queue('prio', 'small', 2, { priority: 5 });
    await queue('prio', 'zed', 1, { priority: 5, ageMs: 120_000 });
    const { rows } = await claim('prio', 4);
    expect(rows.map((r) => [r.owner, r.priority])).toEqual([
      ['small', 5],
      ['zed', 5],
      ['small', 5],
      ['big', 0],
    ]);
  });

  it('goes round the owners when there are more than a claim takes', async () => {
    const names = Array.from({ length: 20 }, (_, i) => `o${String(i).padStart(2, '0')}`);
    for (const name of names) await queue('ring', name, 3);
    let cursor = '';
    const taken: string[] = [];
    for (let pass = 0; pass < 6; pass++) {
      const result = await claim('ring', 4, true, cursor);
      cursor = result.cursor;
      taken.push(...owners(result.rows));
    }
    // Every owner's first task before any owner's second: the first 20 are 20 owners, in turn.
    expect(taken.slice(0, 20)).toEqual(names);
    expect(taken.slice(20)).toEqual(names.slice(0, 4));
  });

  it('serves at most 4 owners a round, an even share each, and the next 4 the next round', async () => {
    const names = Array.from({ length: 12 }, (_, i) => `w${String(i).padStart(2, '0')}`);
    for (const name of names) await queue('wide', name, 5);
    const first = await claim('wide', 32);
    // Four owners, all five of each in turn (a share of eight is more than they have), then
    // the next four, three each: the first of each, then the second of each, …
    expect(owners(first.rows)).toEqual([
      ...[1, 2, 3, 4, 5].flatMap(() => names.slice(0, 4)),
      ...[1, 2, 3].flatMap(() => names.slice(4, 8)),
    ]);
    const second = await claim('wide', 32, true, first.cursor);
    expect(owners(second.rows).slice(0, 4)).toEqual(names.slice(8, 12));
  });

  // PGlite has one connection: a claim waits for the other's transaction there, so only
  // Postgres shows two claims at once.
  it.runIf(backend === 'pg')(
    "leaves another claim's locked rows and goes on to the next ones",
    async () => {
      await queue('locked', 'a', 3);
      await queue('locked', 'b', 3);
      await t.app.db.kysely.transaction().execute(async (trx) => {
        const first = await claimWork(trx, 'w1', ['locked'], 2, 60_000);
        const second = await claim('locked', 2);
        expect(owners(first.rows)).toEqual(['a', 'b']);
        expect(owners(second.rows)).toEqual(['a', 'b']);
        expect(second.rows.map((r) => r.id)).not.toContain(first.rows[0]!.id);
      });
    },
  );
});

describe('what a claim reads', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startTestApp({ env: { ROLE: 'api' } });
  });
  afterAll(() => t?.stop());

  /** Rows of tasks one fair claim of 32 reads (heap fetches and sequential reads), rolled back. */
  async function reads(): Promise<number> {
    let read = 0;
    await t.app.db.kysely
      .transaction()
      .execute(async (trx) => {
        await claimWork(trx, 'cost', ['cost'], 32, 60_000, { free: 8 });
        const stats = await sql<{ n: string }>`
          select coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0) as n
          from pg_stat_xact_user_tables where relname = 'tasks'`.execute(trx);
        read = Number(stats.rows[0]?.n ?? 0);
        throw new Error('rollback');
      })
      .catch((err: Error) => {
        if (err.message !== 'rollback') throw err;
      });
    return read;
  }

  /**
   * `n` tasks of `owner` (each its own owner when null), ready, or held by a key at its limit:
   * `rate` (one start an hour) or `key` (one at a time).
   */
  async function add(n: number, owner: string | null, held?: 'rate' | 'key'): Promise<void> {
    await sql`
      insert into tasks (id, owner, kind, ttl_ms, expires_at, poll_interval_ms, max_attempts,
                         timeout_ms, hold, rate_limit, rate_period_ms, rate_limit_key,
                         concurrency_limit, concurrency_key)
      select gen_random_uuid(), coalesce(${owner}::text, 'owner-' || i), 'cost', 3600000,
             now() + interval '1 hour', 1000, 3, 60000, ${held ?? null}::text,
             r.n, r.n * 3600000, r.k, c.n, c.k
      from generate_series(1, ${n}::int) i,
        lateral (select case when ${held ?? null}::text = 'rate' then 1 end as n, 'rk' as k) r,
        lateral (select case when ${held ?? null}::text = 'key' then 1 end as n, 'ck' as k) c`.execute(
      t.app.db.kysely,
    );
    await sql`analyze tasks`.execute(t.app.db.kysely);
  }

  // Postgres counts a transaction's reads per table (pg_stat_xact_user_tables); PGlite does not.
  it.runIf(backend === 'pg')(
    'does not grow with the held tasks, the backlog or the owners',
    async () => {
      await add(100, 'alice');
      const small = await reads();
      expect(small).toBeGreaterThan(0);
      await add(BACKLOG, 'big');
      await add(BACKLOG / 4, null);
      await add(BACKLOG / 4, 'rated', 'rate');
      await add(BACKLOG / 4, 'keyed', 'key');
      await sql`insert into task_rate_holds values ('cost', 'rk', now() + interval '1 hour')`.execute(
        t.app.db.kysely,
      );
      await sql`insert into task_key_holds values ('cost', 'ck')`.execute(t.app.db.kysely);
      const large = await reads();
      // A few probes per owner walked and a row per task picked, whatever waits beside them.
      expect(large).toBeLessThan(small * 4);
      expect(large).toBeLessThan(1_000);
    },
  );
});

describe('a runner with RUNNER_FAIRNESS', () => {
  const order: string[] = [];
  let open: (() => void) | undefined;
  /** Records whose task starts; `gate` waits until opened. */
  const turn = defineTaskKind<{ gate?: boolean }, null>({
    name: 'turn',
    description: 'records its owner',
    inputSchema: { type: 'object' },
    async run({ owner, input }) {
      order.push(owner);
      if (input.gate) await new Promise<void>((resolve) => (open = resolve));
      return null;
    },
  });

  it.each([
    // Bob's task is claimed in the next pass after the one that found it, or in that one: the
    // owner served last (alice's gate, when a claim took it) waits a turn.
    ['owner', (bob: number) => bob <= 1],
    ['fifo', (bob: number) => bob === 3],
  ])('%s: orders alice’s backlog and bob’s one task as said', async (fairness, bobAt) => {
    order.length = 0;
    open = undefined;
    const t = await startTestApp({
      kinds: [turn],
      env: { RUNNER_CONCURRENCY: '1', RUNNER_PREFETCH: '0', RUNNER_FAIRNESS: fairness },
    });
    try {
      const alice = { id: 'alice', admin: false };
      const gate = await t.app.tasks.start(alice, { kind: 'turn', input: { gate: true } });
      await eventually(async () => open);
      const ids = [gate.task.id];
      for (let i = 0; i < 3; i++)
        ids.push((await t.app.tasks.start(alice, { kind: 'turn', input: {} })).task.id);
      ids.push((await t.app.tasks.start({ id: 'bob', admin: false }, { kind: 'turn' })).task.id);
      open!();
      await eventually(async () => (order.length === 5 ? true : undefined));
      const after = order.slice(1);
      expect(after.filter((o) => o === 'alice')).toHaveLength(3);
      expect(bobAt(after.indexOf('bob'))).toBe(true);
    } finally {
      await t.stop();
    }
  });
});
