import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXPORT_MAX_ROWS } from '../../src/kinds/export.js';
import { eventually, startTestApp, type TestApp } from '../helpers/app.js';

const START = `mutation($input: StartTaskInput!) { startTask(input: $input) { id status } }`;
const GET = `query($id: ID!) { task(id: $id) { id status result error { code message } } }`;
const CANCEL = `mutation($id: ID!) { cancelTask(id: $id) { id status } }`;
const COLUMNS = 'id,kind,status,createdAt,lastUpdatedAt,expiresAt';

let t: TestApp;
let alice: string;
let bob: string;
/** Alice's tasks by status, as started in beforeAll. */
const mine = {
  completed: [] as string[],
  cancelled: [] as string[],
  inputRequired: [] as string[],
};
/** Alice's finished exports: tasks of hers too, so later exports list them. */
const exportsDone: string[] = [];
let bobs: string[] = [];
let aliceExpired: string;

async function startTask(token: string, kind: string, input: unknown): Promise<string> {
  const res = await t.gql(START, { input: { kind, input } }, token);
  expect(res.errors).toBeUndefined();
  return res.data.startTask.id;
}

async function until(token: string, id: string, status: string) {
  return eventually(async () => {
    const task = (await t.gql(GET, { id }, token)).data.task;
    return task?.status === status ? task : undefined;
  }, 20_000);
}

/** Runs an export for `token` and returns its result once COMPLETED. */
async function exportAs(token: string, input: Record<string, unknown>) {
  const id = await startTask(token, 'export', input);
  const task = await until(token, id, 'COMPLETED');
  if (token === alice) exportsDone.push(id);
  return {
    id,
    result: task.result as { format: string; rows: number; content: string; truncated: boolean },
  };
}

/** Inserts `count` finished tasks for `owner` in one statement, newest created `now()`, one millisecond apart. */
async function insertFinished(owner: string, count: number, expired = false): Promise<void> {
  await sql`
    insert into tasks (id, owner, kind, status, result, ttl_ms, created_at, last_updated_at, expires_at, poll_interval_ms, max_attempts, timeout_ms)
    select gen_random_uuid(), ${owner}, 'sleep', 'completed', '{"sleptMs":0}'::jsonb, 3600000,
           now() - i * interval '1 millisecond', now() - i * interval '1 millisecond',
           ${expired ? sql`now() - interval '1 second'` : sql`now() + interval '1 hour'`}, 1000, 3, 60000
    from generate_series(1, ${count}::int) as i`.execute(t.app.db.kysely);
}

beforeAll(async () => {
  t = await startTestApp();
  alice = await t.token('alice');
  bob = await t.token('bob');
  for (let i = 0; i < 3; i++) mine.completed.push(await startTask(alice, 'sleep', { ms: 0 }));
  const slow = await startTask(alice, 'sleep', { ms: 600_000 });
  await t.gql(CANCEL, { id: slow }, alice);
  mine.cancelled.push(slow);
  mine.inputRequired.push(await startTask(alice, 'approval', { question: 'Export?' }));
  bobs = [
    await startTask(bob, 'sleep', { ms: 0 }),
    await startTask(bob, 'approval', { question: 'Mine?' }),
  ];
  for (const id of mine.completed) await until(alice, id, 'COMPLETED');
  await until(alice, mine.inputRequired[0]!, 'INPUT_REQUIRED');
  // An expired task of alice's, not yet purged: exports never show it.
  await insertFinished('alice', 1, true);
  const expired = await t.app.db.kysely
    .selectFrom('tasks')
    .select('id')
    .where('owner', '=', 'alice')
    .where('expires_at', '<=', sql<Date>`now()`)
    .executeTakeFirstOrThrow();
  aliceExpired = expired.id;
});
afterAll(() => t?.stop());

const allMine = () => [...mine.completed, ...exportsDone, ...mine.cancelled, ...mine.inputRequired];

describe('the export kind', () => {
  it("exports the caller's own tasks as CSV, newest first, without itself, others' or expired tasks", async () => {
    const expected = allMine();
    const { id, result } = await exportAs(alice, { format: 'csv' });
    expect(result).toMatchObject({ format: 'csv', rows: expected.length, truncated: false });
    const lines = result.content.trimEnd().split('\n');
    expect(lines[0]).toBe(COLUMNS);
    const records = lines.slice(1).map((line) => {
      const [rowId, kind, status, createdAt, lastUpdatedAt, expiresAt] = line.split(',');
      return { id: rowId!, kind, status, createdAt: createdAt!, lastUpdatedAt, expiresAt };
    });
    expect(records.map((r) => r.id).sort()).toEqual(expected.sort());
    for (const other of [id, aliceExpired, ...bobs]) expect(result.content).not.toContain(other);
    const byId = new Map(records.map((r) => [r.id, r]));
    expect(byId.get(mine.cancelled[0]!)).toMatchObject({ kind: 'sleep', status: 'cancelled' });
    expect(byId.get(mine.inputRequired[0]!)).toMatchObject({
      kind: 'approval',
      status: 'input_required',
    });
    const created = records.map((r) => r.createdAt);
    expect(created).toEqual([...created].sort().reverse());
  });

  it('exports NDJSON with the same rows, one object per line', async () => {
    const expected = allMine();
    const { result } = await exportAs(alice, { format: 'ndjson' });
    expect(result).toMatchObject({ format: 'ndjson', rows: expected.length, truncated: false });
    const records = result.content
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(records.map((r) => r.id).sort()).toEqual(expected.sort());
    for (const record of records) {
      expect(Object.keys(record)).toEqual(COLUMNS.split(','));
      expect(Date.parse(record.expiresAt)).toBeGreaterThan(Date.now());
    }
  });

  it('filters by status, in either case', async () => {
    const done = [...mine.completed, ...exportsDone];
    const completed = await exportAs(alice, { format: 'ndjson', status: ['completed'] });
    expect(
      completed.result.content
        .trimEnd()
        .split('\n')
        .map((line) => JSON.parse(line).id)
        .sort(),
    ).toEqual(done.sort());
    const upper = await exportAs(alice, { format: 'csv', status: ['CANCELLED', 'INPUT_REQUIRED'] });
    expect(upper.result.rows).toBe(2);
    const ids = upper.result.content
      .trimEnd()
      .split('\n')
      .slice(1)
      .map((line) => line.split(',')[0]);
    expect(ids.sort()).toEqual([...mine.cancelled, ...mine.inputRequired].sort());
  });

  it('exports nothing but the header for a principal with no tasks', async () => {
    const carl = await t.token('carl');
    const { result } = await exportAs(carl, { format: 'csv' });
    expect(result).toEqual({ format: 'csv', rows: 0, content: `${COLUMNS}\n`, truncated: false });
  });

  it(`stays bounded for a principal with many tasks: the newest ${EXPORT_MAX_ROWS}, marked truncated`, async () => {
    const extra = 50;
    await insertFinished('carol', EXPORT_MAX_ROWS + extra);
    const carol = await t.token('carol');
    const { result } = await exportAs(carol, { format: 'csv' });
    expect(result.rows).toBe(EXPORT_MAX_ROWS);
    expect(result.truncated).toBe(true);
    const lines = result.content.trimEnd().split('\n');
    expect(lines).toHaveLength(EXPORT_MAX_ROWS + 1);
    const newest = await t.app.db.kysely
      .selectFrom('tasks')
      .select('id')
      .where('owner', '=', 'carol')
      .where('kind', '=', 'sleep')
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .limit(EXPORT_MAX_ROWS + extra)
      .execute();
    const exported = lines.slice(1).map((line) => line.split(',')[0]);
    expect(exported).toEqual(newest.slice(0, EXPORT_MAX_ROWS).map((r) => r.id));
    expect(new Set(exported)).not.toContain(newest.at(-1)!.id);
  });

  it('refuses an unknown format or status as BAD_USER_INPUT', async () => {
    for (const input of [{ format: 'xml' }, { format: 'csv', status: ['done'] }, {}]) {
      const res = await t.gql(START, { input: { kind: 'export', input } }, alice);
      expect(res.errors?.[0]?.extensions?.code, JSON.stringify(input)).toBe('BAD_USER_INPUT');
    }
  });
});
