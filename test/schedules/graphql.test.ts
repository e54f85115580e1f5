import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_SCOPES, startTestApp, type TestApp } from '../helpers/app.js';
import { hold } from '../helpers/kinds.js';
import { ManualClock } from '../helpers/manual-clock.js';

/**
 * Schedules over GraphQL (DESIGN §17): the operations, their scopes and owners as for tasks
 * (§2), the refusals that name the bad cron, zone or input, and the limit an owner.
 */

const UPSERT = `mutation($input: ScheduleInput!, $owner: String) {
  upsertSchedule(input: $input, owner: $owner) {
    key cron timezone kind input missed overlap paused priority labels ttlMs concurrencyKey
    retry { maxAttempts factor } nextRunAt lastRunAt createdAt updatedAt } }`;
const GET = `query($key: String!, $owner: String) { schedule(key: $key, owner: $owner) {
  key input nextRunAt lastRunAt lastTask { id scheduleKey kind status } } }`;
const LIST = `query($first: Int, $after: String, $owner: String) {
  schedules(first: $first, after: $after, owner: $owner) {
    edges { cursor node { key } } pageInfo { hasNextPage endCursor } } }`;

describe('schedules over GraphQL', () => {
  let t: TestApp;
  let alice: string;
  let bob: string;
  let reader: string;
  let admin: string;
  const clock = new ManualClock(Date.parse('2026-05-04T10:00:30Z'));

  const upsert = (input: Record<string, unknown>, token = alice, owner?: string) =>
    t.gql(UPSERT, { input: { kind: 'hold', cron: '*/5 * * * *', ...input }, owner }, token);

  beforeAll(async () => {
    t = await startTestApp({ kinds: [hold], scheduleClock: clock });
    [alice, bob, reader, admin] = await Promise.all([
      t.token('alice'),
      t.token('bob'),
      t.token('alice', ['tasks:read']),
      t.token('root', ADMIN_SCOPES),
    ]);
  });
  afterAll(() => t?.stop());

  it('saves a schedule, replaces it by key, and reads it back', async () => {
    const created = await upsert({
      key: 'nightly export',
      cron: '0 2 * * *',
      timezone: 'europe/berlin',
      kind: 'hold',
      input: { format: 'csv' },
      missed: 'ONCE',
      overlap: 'SKIP',
      priority: 5,
      labels: { team: 'data' },
      retry: { maxAttempts: 2 },
      ttlMs: 60_000,
      concurrencyKey: 'exports',
    });
    expect(created.errors).toBeUndefined();
    expect(created.data.upsertSchedule).toMatchObject({
      key: 'nightly export',
      cron: '0 2 * * *',
      timezone: 'Europe/Berlin',
      input: { format: 'csv' },
      missed: 'ONCE',
      overlap: 'SKIP',
      paused: false,
      priority: 5,
      labels: { team: 'data' },
      retry: { maxAttempts: 2, factor: null },
      ttlMs: 60_000,
      concurrencyKey: 'exports',
      nextRunAt: '2026-05-05T00:00:00.000Z', // 02:00 CEST
      lastRunAt: null,
    });
    const replaced = await upsert({ key: 'nightly export', cron: '@hourly', paused: true });
    expect(replaced.data.upsertSchedule).toMatchObject({
      cron: '@hourly',
      timezone: 'UTC',
      missed: 'SKIP',
      overlap: 'ALLOW',
      paused: true,
      priority: null,
      nextRunAt: null,
      createdAt: created.data.upsertSchedule.createdAt,
    });
    // `paused` omitted: the schedule stays as it is.
    expect(
      (await upsert({ key: 'nightly export', cron: '@daily' })).data.upsertSchedule,
    ).toMatchObject({ paused: true, nextRunAt: null });
    const resumed = await t.gql(
      'mutation { pauseSchedule(key: "nightly export", paused: false) { paused nextRunAt } }',
      {},
      alice,
    );
    expect(resumed.data.pauseSchedule).toEqual({
      paused: false,
      nextRunAt: '2026-05-05T00:00:00.000Z',
    });
  });

  it('triggers a task of the schedule out of turn, and shows it as the last', async () => {
    await upsert({ key: 'reports', input: { n: 1 } });
    const triggered = await t.gql(
      'mutation { triggerSchedule(key: "reports") { id kind scheduleKey input } }',
      {},
      alice,
    );
    expect(triggered.data.triggerSchedule).toMatchObject({
      kind: 'hold',
      scheduleKey: 'reports',
      input: { n: 1 },
    });
    const read = await t.gql(GET, { key: 'reports' }, alice);
    expect(read.data.schedule).toMatchObject({
      key: 'reports',
      nextRunAt: '2026-05-04T10:05:00.000Z',
      lastRunAt: '2026-05-04T10:00:30.000Z',
      lastTask: { id: triggered.data.triggerSchedule.id, scheduleKey: 'reports' },
    });
  });

  it('lists by key, a page at a time, and deletes', async () => {
    for (const key of ['list-a', 'list-b', 'list-c']) await upsert({ key });
    const seen: string[] = [];
    let after: string | null = null;
    for (;;) {
      const page: any = await t.gql(LIST, { first: 2, after }, alice);
      seen.push(...page.data.schedules.edges.map((e: any) => e.node.key));
      if (!page.data.schedules.pageInfo.hasNextPage) break;
      after = page.data.schedules.pageInfo.endCursor;
    }
    expect(seen.filter((k) => k.startsWith('list-'))).toEqual(['list-a', 'list-b', 'list-c']);
    expect(seen).toEqual([...seen].sort());
    const deleted = await t.gql('mutation { deleteSchedule(key: "list-b") }', {}, alice);
    expect(deleted.data.deleteSchedule).toBe(true);
    const again = await t.gql('mutation { deleteSchedule(key: "list-b") }', {}, alice);
    expect(again.data.deleteSchedule).toBe(false);
    expect((await t.gql(GET, { key: 'list-b' }, alice)).data.schedule).toBeNull();
  });

  it('refuses a bad cron, zone or input by name, and checks the input against the kind', async () => {
    const refusal = async (input: Record<string, unknown>) => {
      const { errors } = await upsert({ key: 'bad', ...input });
      expect(errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
      return errors![0]!.message;
    };
    expect(await refusal({ cron: '0 25 * * *' })).toContain('cron "0 25 * * *"');
    expect(await refusal({ cron: '@reboot' })).toContain('@hourly');
    expect(await refusal({ timezone: 'Europe/Atlantis' })).toContain('timezone "Europe/Atlantis"');
    expect(await refusal({ kind: 'sleep', input: { ms: -1 } })).toContain('input of kind sleep');
    expect(await refusal({ kind: 'no-such-kind' })).toContain('no-such-kind');
    expect(await refusal({ priority: 1000 })).toContain('priority');
    expect(await refusal({ key: '' })).toContain('key');
    expect((await t.gql(GET, { key: 'bad' }, alice)).data.schedule).toBeNull();
  });

  it('keeps schedules to their owner; an admin names another with `owner`', async () => {
    await upsert({ key: 'private', input: { secret: 1 } });
    expect((await t.gql(GET, { key: 'private' }, bob)).data.schedule).toBeNull();
    const named = await t.gql(GET, { key: 'private', owner: 'alice' }, bob);
    expect(named.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    const triggered = await t.gql('mutation { triggerSchedule(key: "private") { id } }', {}, bob);
    expect(triggered.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
    const asAdmin = await t.gql(GET, { key: 'private', owner: 'alice' }, admin);
    expect(asAdmin.data.schedule).toMatchObject({ key: 'private', input: null });
    const forAlice = await upsert({ key: 'set-by-admin' }, admin, 'alice');
    expect(forAlice.errors).toBeUndefined();
    expect((await t.gql(GET, { key: 'set-by-admin' }, alice)).data.schedule.key).toBe(
      'set-by-admin',
    );
  });

  it('needs tasks:read to read and tasks:write for the rest', async () => {
    expect((await t.gql(GET, { key: 'private' }, reader)).data.schedule.key).toBe('private');
    for (const mutation of [
      'mutation { deleteSchedule(key: "private") }',
      'mutation { pauseSchedule(key: "private", paused: true) { key } }',
      'mutation { triggerSchedule(key: "private") { id } }',
    ]) {
      const { errors } = await t.gql(mutation, {}, reader);
      expect(errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    }
    expect((await upsert({ key: 'nope' }, reader)).errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    expect((await t.gql(LIST, {}, null)).errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED');
  });

  it('holds an owner to a thousand schedules', async () => {
    const db = t.app.db.kysely;
    await sql`insert into schedules (owner, key, cron, timezone, kind)
      select 'carol', 'filler-' || i, '@daily', 'UTC', 'hold' from generate_series(1, 999) i`.execute(
      db,
    );
    const carol = await t.token('carol');
    expect((await upsert({ key: 'the-1000th' }, carol)).errors).toBeUndefined();
    const over = await upsert({ key: 'the-1001st' }, carol);
    expect(over.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
    expect(over.errors?.[0]?.message).toContain('1000');
    // Replacing one of the thousand is no new schedule.
    expect((await upsert({ key: 'the-1000th', cron: '@weekly' }, carol)).errors).toBeUndefined();
  });
});

describe('a list of schedules under a rate limit', () => {
  let t: TestApp;
  afterAll(() => t?.stop());

  it('costs one operation, however many last tasks it shows', async () => {
    t = await startTestApp({
      kinds: [hold],
      env: { RATE_LIMIT_RPS: '0.01', RATE_LIMIT_BURST: '12' },
    });
    const alice = await t.token('alice');
    for (const key of ['a', 'b', 'c', 'd', 'e']) {
      await t.gql(UPSERT, { input: { key, kind: 'hold', cron: '@daily' } }, alice);
      await t.gql(`mutation { triggerSchedule(key: "${key}") { id } }`, {}, alice);
    }
    const listed = await t.gql(
      '{ schedules { edges { node { key lastTask { id scheduleKey } } } } }',
      {},
      alice,
    );
    expect(listed.errors).toBeUndefined();
    expect(listed.data.schedules.edges.map((e: any) => e.node.lastTask.scheduleKey)).toEqual([
      'a',
      'b',
      'c',
      'd',
      'e',
    ]);
  });
});
