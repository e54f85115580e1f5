import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkFilter, type TaskFilter } from '../../src/tasks/filter.js';
import { listQuery } from '../../src/tasks/sql/list.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { backend } from '../helpers/db.js';

/**
 * Every filtered page walks an ordered index and stops (DESIGN §15): the plan Postgres picks
 * for each filter, over thousands of tasks of one owner, reads an index in order under its Limit,
 * with no Sort, no sequential scan and no bitmap scan (each would read every match first).
 */

// Embedded PGlite writes more slowly; its planner decides on the same statistics.
const ROWS = backend === 'pg' ? 20_000 : 5_000;
let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ env: { ROLE: 'api' } });
  const db = t.app.db.kysely;
  for (const owner of ['big', 'other']) {
    await sql`
      with t as (
        insert into tasks (id, owner, kind, status, input, ttl_ms, expires_at, poll_interval_ms,
                           max_attempts, timeout_ms, labels, created_at)
        select gen_random_uuid(), ${owner}, (array['a','b','c'])[1 + i % 3],
               (array['working','input_required','completed','cancelled','failed'])[1 + i % 5],
               '{}', 86400000, now() + interval '1 day', 1000, 1, 60000,
               jsonb_build_object('team', (i % 10)::text, 'batch', (i % 100)::text),
               now() - i * interval '1 millisecond'
        from generate_series(1, ${ROWS}::int) i
        returning id, owner, labels, created_at
      )
      insert into task_labels (owner, key, value, created_at, task_id)
      select t.owner, e.key, e.value, t.created_at, t.id from t, jsonb_each_text(t.labels) e`.execute(
      db,
    );
  }
  await sql`analyze`.execute(db);
}, 240_000);
afterAll(() => t?.stop());

interface PlanNode {
  'Node Type': string;
  'Index Name'?: string;
  Plans?: PlanNode[];
}

function nodes(plan: PlanNode): PlanNode[] {
  return [plan, ...(plan.Plans ?? []).flatMap(nodes)];
}

async function planOf(filter: TaskFilter, after?: { createdAt: Date; id: string }) {
  const query = listQuery({
    owner: 'big',
    filter: checkFilter(filter),
    first: 20,
    after: after ?? null,
  });
  const result = await sql<{ 'QUERY PLAN': unknown }>`explain (format json) ${query}`.execute(
    t.app.db.kysely,
  );
  const raw = result.rows[0]?.['QUERY PLAN'];
  const parsed = (typeof raw === 'string' ? JSON.parse(raw) : raw) as Array<{ Plan: PlanNode }>;
  return nodes(parsed[0]!.Plan);
}

describe('filtered pages', () => {
  it.each([
    ['no filter', {}, 'tasks_owner_status_created'],
    ['a label', { labels: { team: '3' } }, 'task_labels_pkey'],
    ['two labels', { labels: { batch: '42', team: '2' } }, 'task_labels_pkey'],
    ['a kind', { kinds: ['b'] }, 'tasks_owner_kind_created'],
    ['two kinds', { kinds: ['a', 'c'] }, 'tasks_owner_kind_created'],
    ['a status', { statuses: ['failed'] }, 'tasks_owner_status_created'],
    ['two statuses', { statuses: ['failed', 'working'] }, 'tasks_owner_status_created'],
  ] as Array<[string, TaskFilter, string]>)(
    'walks an index in order for %s, with no sort and no full scan',
    async (_name, filter, index) => {
      for (const after of [
        undefined,
        { createdAt: new Date(Date.now() - 5_000), id: crypto.randomUUID() },
      ]) {
        const plan = await planOf(filter, after);
        expect(plan[0]?.['Node Type']).toBe('Limit');
        const types = plan.map((n) => n['Node Type']);
        expect(types).not.toContain('Sort');
        expect(types).not.toContain('Seq Scan');
        expect(types).not.toContain('Bitmap Heap Scan');
        expect(plan.map((n) => n['Index Name'])).toContain(index);
      }
    },
  );
});
