import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../../helpers/app.js';
import { type FixtureServer, spawnFixtureServer } from '../../helpers/cluster.js';
import { backend, freshDatabase, type TestDatabase } from '../../helpers/db.js';
import { gqlAt } from '../../helpers/process.js';
import { readWriteToken } from '../../helpers/secret.js';

/**
 * The per-key limit and retries across real, separate server processes on one Postgres
 * database (PGlite cannot be shared between processes, so this file runs on Postgres only).
 */

interface Span {
  task_id: string;
  key: string | null;
  pid: number;
  attempt: number;
  started_at: Date;
  ended_at: Date | null;
}

const START = `mutation($input: StartTaskInput!) { startTask(input: $input) { id } }`;
const GET = `query($id: ID!) { task(id: $id) { id status attempt lastError { code } result } }`;

/** The most spans open at once. */
function maxOverlap(spans: Span[]): number {
  const edges = spans.flatMap((s) => [
    [s.started_at.getTime(), 1],
    [s.ended_at!.getTime(), -1],
  ]);
  // At one instant an end comes before a start: the slot was given back first.
  edges.sort((a, b) => a[0]! - b[0]! || a[1]! - b[1]!);
  let open = 0;
  let most = 0;
  for (const [, delta] of edges) {
    open += delta!;
    most = Math.max(most, open);
  }
  return most;
}

describe.runIf(backend === 'pg')('managing the work across processes', { timeout: 120_000 }, () => {
  let database: TestDatabase;
  let client: pg.Client;
  let token: string;
  const servers: FixtureServer[] = [];

  async function spawn(): Promise<FixtureServer> {
    const server = await spawnFixtureServer(
      'test/helpers/work-server.ts',
      'work server listening',
      database.url!,
      { RUNNER_CONCURRENCY: '4', TASK_LEASE_MS: '3000' },
    );
    servers.push(server);
    return server;
  }

  async function start(url: string, input: Record<string, unknown>): Promise<string> {
    const res = await gqlAt(url, START, { input }, token);
    expect(res.errors).toBeUndefined();
    return res.data.startTask.id;
  }

  async function spans(): Promise<Span[]> {
    return (await client.query<Span>('select * from test_spans')).rows;
  }

  beforeAll(async () => {
    database = await freshDatabase();
    client = new pg.Client({ connectionString: database.url });
    await client.connect();
    await client.query(`create table test_spans (
      task_id uuid, key text, pid int, attempt int, started_at timestamptz, ended_at timestamptz)`);
    token = await readWriteToken();
    await Promise.all([spawn(), spawn(), spawn()]);
  }, 180_000);
  afterAll(async () => {
    for (const s of servers) if (s.node.child.exitCode === null) s.node.child.kill('SIGKILL');
    await Promise.all(servers.map((s) => s.node.exited));
    await client?.end();
    await database?.drop();
  });

  it('never runs more than the limit of one key at once, and a saturated key delays no other', async () => {
    // 40 tasks on a busy key first, then 10 each on two others: all held to 2 at once.
    const jobs = [
      ...Array.from({ length: 40 }, () => 'busy'),
      ...Array.from({ length: 10 }, () => 'b'),
      ...Array.from({ length: 10 }, () => 'c'),
    ];
    // Started in parallel, the busy key's first: its backlog (40 × 400 ms, 2 at a time) far
    // outlasts the other keys' work.
    const startAll = (from: number, to: number) =>
      Promise.all(
        jobs.slice(from, to).map((key, i) =>
          start(servers[i % 3]!.url, {
            kind: 'span',
            input: { key, ms: 400 },
            concurrencyKey: key,
            concurrencyLimit: 2,
          }),
        ),
      );
    const ids = [...(await startAll(0, 40)), ...(await startAll(40, 60))];
    const all = await eventually(async () => {
      const rows = (await spans()).filter((s) => s.key !== null && s.ended_at !== null);
      return rows.length === 60 ? rows : undefined;
    }, 90_000);
    const byKey = (key: string) => all.filter((s) => s.key === key);
    for (const key of ['busy', 'b', 'c']) expect(maxOverlap(byKey(key))).toBeLessThanOrEqual(2);
    expect(maxOverlap(byKey('busy'))).toBe(2);
    // The work was spread over the processes.
    expect(new Set(all.map((s) => s.pid)).size).toBeGreaterThan(1);
    // Every task of the other keys was done before the busy key's backlog was.
    const lastBusyStart = Math.max(...byKey('busy').map((s) => s.started_at.getTime()));
    for (const key of ['b', 'c'])
      for (const s of byKey(key)) expect(s.ended_at!.getTime()).toBeLessThan(lastBusyStart);
    for (const id of ids.slice(0, 3)) {
      const res = await gqlAt(servers[0]!.url, GET, { id }, token);
      expect(res.data.task).toMatchObject({ status: 'COMPLETED' });
    }
  });

  it('a crash during an attempt uses that attempt, and the next runs in another process', async () => {
    const id = await start(servers[0]!.url, { kind: 'crashy', input: {} });
    const first = await eventually(async () =>
      (await spans()).find((s) => s.task_id === id && s.attempt === 1),
    );
    const crashed = servers.find((s) => s.pid === first.pid)!;
    crashed.node.child.kill('SIGKILL');
    await crashed.node.exited;
    const alive = servers.find((s) => s !== crashed)!;
    const task = await eventually(async () => {
      const res = await gqlAt(alive.url, GET, { id }, token);
      return res.data?.task?.status === 'COMPLETED' ? res.data.task : undefined;
    }, 60_000);
    expect(task).toMatchObject({ attempt: 2 });
    const second = (await spans()).find((s) => s.task_id === id && s.attempt === 2)!;
    expect(second.pid).not.toBe(first.pid);
    expect(task.result.pid).toBe(second.pid);
  });
});
