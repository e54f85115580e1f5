import fc from 'fast-check';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkFilter, matches, type TaskFilter } from '../../src/tasks/filter.js';
import type { TaskStatus } from '../../src/tasks/status.js';
import { ADMIN_SCOPES, startTestApp, type TestApp } from '../helpers/app.js';
import { holdWith } from '../helpers/kinds.js';
import { restClient } from '../helpers/rest.js';

/**
 * Filters on `tasks` and `GET /v1/jobs` (DESIGN §15) against a brute-force filter over the same
 * rows: the rows are written straight into the table (statuses and creation times of every
 * sort, without running anything), then random filters are paged through on both faces.
 */

const KINDS = ['alpha', 'beta', 'gamma'] as const;
const STATUSES: TaskStatus[] = ['working', 'input_required', 'completed', 'cancelled', 'failed'];
const LABEL_VALUES = { team: ['a', 'b'], env: ['prod', 'dev'], run: ['1', '2', '3'] } as const;
const BASE = Date.parse('2026-01-01T00:00:00Z');

interface Row {
  id: string;
  kind: string;
  status: TaskStatus;
  labels: Record<string, string>;
  createdAt: Date;
}

let t: TestApp;
let alice: string;
let root: string;
let api: ReturnType<typeof restClient>;
const rows: Row[] = [];

beforeAll(async () => {
  t = await startTestApp({
    kinds: KINDS.map((name) => holdWith({ name })),
    env: { ROLE: 'api' },
  });
  alice = await t.token('alice');
  root = await t.token('root', ADMIN_SCOPES);
  api = restClient(t.url);
  // 150 tasks, several sharing a creation instant so the id breaks ties, written as the
  // service would (tasks and task_labels), with a status the runner never gets to touch.
  const random = fc.sample(
    fc.record({
      kind: fc.constantFrom(...KINDS),
      status: fc.constantFrom(...STATUSES),
      team: fc.option(fc.constantFrom(...LABEL_VALUES.team), { nil: undefined }),
      env: fc.option(fc.constantFrom(...LABEL_VALUES.env), { nil: undefined }),
      run: fc.option(fc.constantFrom(...LABEL_VALUES.run), { nil: undefined }),
      minute: fc.integer({ min: 0, max: 59 }),
    }),
    { numRuns: 150, seed: 42 },
  );
  for (const r of random) {
    const labels = Object.fromEntries(
      Object.entries({ team: r.team, env: r.env, run: r.run }).filter(([, v]) => v !== undefined),
    ) as Record<string, string>;
    rows.push({
      id: crypto.randomUUID(),
      kind: r.kind,
      status: r.status,
      labels,
      createdAt: new Date(BASE + r.minute * 60_000),
    });
  }
  const db = t.app.db.kysely;
  for (const row of rows) {
    await sql`
      with t as (
        insert into tasks (id, owner, kind, status, input, ttl_ms, expires_at, poll_interval_ms,
                           max_attempts, timeout_ms, labels, created_at)
        values (${row.id}::uuid, 'alice', ${row.kind}, ${row.status}, '{}', 86400000,
                now() + interval '1 day', 1000, 1, 60000, ${JSON.stringify(row.labels)}::jsonb,
                ${row.createdAt.toISOString()}::timestamptz)
        returning *
      )
      insert into task_labels (owner, key, value, created_at, task_id)
      select t.owner, e.key, e.value, t.created_at, t.id from t, jsonb_each_text(t.labels) e`.execute(
      db,
    );
  }
});
afterAll(() => t?.stop());

/** The expected ids, newest first: every row that `matches` the filter, sorted as the list is. */
function bruteForce(filter: TaskFilter): string[] {
  const checked = checkFilter(filter);
  return rows
    .filter((row) => matches({ ...row, parentId: null }, checked))
    .sort(
      (a, b) =>
        b.createdAt.getTime() - a.createdAt.getTime() || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0),
    )
    .map((row) => row.id);
}

const TASKS = `query($first: Int, $after: String, $filter: TaskFilter) {
  tasks(first: $first, after: $after, filter: $filter) {
    edges { node { id } } pageInfo { hasNextPage endCursor } } }`;

async function pagesOverGraphQL(filter: TaskFilter, first: number): Promise<string[]> {
  const ids: string[] = [];
  let after: string | null = null;
  for (;;) {
    const variables: Record<string, unknown> = {
      first,
      after,
      filter: {
        status: filter.statuses?.map((s) => s.toUpperCase()),
        kind: filter.kinds,
        labels: filter.labels,
        createdAfter: filter.createdAfter?.toISOString(),
        createdBefore: filter.createdBefore?.toISOString(),
      },
    };
    const res = await t.gql(TASKS, variables, alice);
    expect(res.errors).toBeUndefined();
    const page: {
      edges: Array<{ node: { id: string } }>;
      pageInfo: { hasNextPage: boolean; endCursor: string };
    } = res.data.tasks;
    ids.push(...page.edges.map((e) => e.node.id));
    if (!page.pageInfo.hasNextPage) return ids;
    after = page.pageInfo.endCursor;
  }
}

async function pagesOverRest(filter: TaskFilter, first: number): Promise<string[]> {
  const query = new URLSearchParams({ limit: String(first) });
  for (const s of filter.statuses ?? []) query.append('status', s);
  if (filter.kinds?.length) query.append('kind', filter.kinds.join(','));
  for (const [k, v] of Object.entries(filter.labels ?? {})) query.append('label', `${k}:${v}`);
  if (filter.createdAfter) query.set('createdAfter', filter.createdAfter.toISOString());
  if (filter.createdBefore) query.set('createdBefore', filter.createdBefore.toISOString());
  const ids: string[] = [];
  let path = `/v1/jobs?${query}`;
  for (;;) {
    const res = await api('GET', path, { token: alice });
    expect(res.status).toBe(200);
    ids.push(...res.body.tasks.map((x: { taskId: string }) => x.taskId));
    const link = res.headers.get('link');
    if (!res.body.nextCursor) return ids;
    expect(link).toContain('rel="next"');
    path = (link as string).slice(1, link?.indexOf('>'));
  }
}

const filters = fc.record(
  {
    statuses: fc.uniqueArray(fc.constantFrom(...STATUSES), { minLength: 1, maxLength: 3 }),
    kinds: fc.uniqueArray(fc.constantFrom(...KINDS), { minLength: 1, maxLength: 2 }),
    labels: fc.record(
      {
        team: fc.constantFrom(...LABEL_VALUES.team),
        env: fc.constantFrom(...LABEL_VALUES.env),
        run: fc.constantFrom(...LABEL_VALUES.run),
      },
      { requiredKeys: [] },
    ),
    createdAfter: fc.integer({ min: 0, max: 59 }).map((m) => new Date(BASE + m * 60_000)),
    createdBefore: fc.integer({ min: 0, max: 60 }).map((m) => new Date(BASE + m * 60_000)),
  },
  { requiredKeys: [] },
);

describe('filters', () => {
  it('pages through exactly the rows a brute-force filter keeps, on GraphQL and REST', async () => {
    await fc.assert(
      fc.asyncProperty(filters, fc.integer({ min: 1, max: 40 }), async (filter, first) => {
        const expected = bruteForce(filter);
        expect(await pagesOverGraphQL(filter, first)).toEqual(expected);
        expect(await pagesOverRest(filter, first)).toEqual(expected);
      }),
      { numRuns: 40, seed: 7 },
    );
  });

  it('lets an admin filter another principal’s tasks with owner, and refuses anyone else', async () => {
    const filter = { labels: { team: 'a' } };
    const admin = await t.gql(TASKS, { first: 100, filter: { ...filter, owner: 'alice' } }, root);
    expect(admin.data.tasks.edges.map((e: { node: { id: string } }) => e.node.id)).toEqual(
      bruteForce(filter),
    );
    const rest = await api('GET', '/v1/jobs?owner=alice&label=team:a&limit=100', { token: root });
    expect(rest.body.tasks).toHaveLength(bruteForce(filter).length);
    const bob = await t.token('bob');
    const refused = await t.gql(TASKS, { filter: { owner: 'alice' } }, bob);
    expect(refused.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    expect((await api('GET', '/v1/jobs?owner=alice', { token: bob })).status).toBe(403);
  });

  it('refuses malformed filters as BAD_USER_INPUT', async () => {
    const bad = [
      { labels: { 'Bad Key': 'x' } },
      { labels: 'team:a' },
      { kind: Array.from({ length: 21 }, (_, i) => `k${i}`) },
    ];
    for (const filter of bad) {
      const res = await t.gql(TASKS, { filter }, alice);
      expect(res.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
    }
    for (const query of ['status=done', 'label=novalue', 'createdAfter=yesterday']) {
      const res = await api('GET', `/v1/jobs?${query}`, { token: alice });
      expect(res.status).toBe(422);
      expect(res.body.code).toBe('BAD_USER_INPUT');
    }
  });

  it('refuses a bad status or date on REST with the domain’s own words', async () => {
    const domainSays = (filter: TaskFilter) => {
      try {
        checkFilter(filter);
      } catch (err) {
        return (err as Error).message;
      }
      throw new Error('the domain took it');
    };
    const cases: Array<[query: string, body: Record<string, unknown>, filter: TaskFilter]> = [
      ['status=Done', { status: ['done'] }, { statuses: ['done' as TaskStatus] }],
      [
        'createdAfter=yesterday',
        { createdAfter: 'yesterday' },
        { createdAfter: new Date('yesterday') },
      ],
      ['createdBefore=2026-13-40', { createdBefore: 5 }, { createdBefore: new Date(Number.NaN) }],
    ];
    for (const [query, body, filter] of cases) {
      const listed = await api('GET', `/v1/jobs?${query}`, { token: alice });
      const cancelled = await api('POST', '/v1/jobs/cancel', { token: alice, body });
      for (const res of [listed, cancelled]) {
        expect(res.status, query).toBe(422);
        expect(res.body.detail).toBe(domainSays(filter));
      }
    }
  });
});
