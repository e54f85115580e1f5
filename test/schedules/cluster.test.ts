import { once } from 'node:events';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../helpers/app.js';
import { databaseEnv } from '../helpers/database-env.js';
import { backend, freshDatabase, type TestDatabase } from '../helpers/db.js';
import { gqlAt, type NodeProcess, SERVER_ENV, spawnNode } from '../helpers/process.js';
import { readWriteToken } from '../helpers/secret.js';

/**
 * Exactly one task an occurrence (DESIGN §17) across real server processes on one Postgres
 * database, killed with SIGKILL and started again around occurrence boundaries: two, then
 * four, then none for ten minutes. The processes fire by one clock the test moves
 * (test/helpers/schedule-server.ts), so each minute passes as soon as every schedule has
 * moved on. PGlite cannot be shared between processes: this file runs on Postgres only.
 */

interface Server {
  node: NodeProcess;
  url: string;
}

const UPSERT = `mutation($input: ScheduleInput!) { upsertSchedule(input: $input) { nextRunAt } }`;
const m = (n: number) => Date.parse('2026-05-04T10:00:00Z') + n * 60_000;
const iso = (ms: number) => new Date(ms).toISOString();
const KEYS = ['all', 'once', 'skip'] as const;
/** Killed around minutes 1 … 12: [minute, how many]; then all four. */
const KILLS = new Map([
  [2, 1],
  [5, 1],
  [8, 2],
  [11, 1],
]);
/** Two, two more, a replacement for each kill, and two after the time with none. */
const PROCESSES = 2 + 2 + 5 + 2;

describe.runIf(backend === 'pg')('schedules across processes', { timeout: 180_000 }, () => {
  let database: TestDatabase;
  let client: pg.Client;
  let now = m(0) + 30_000;
  const live = new Set<Server>();
  const spawned: NodeProcess[] = [];

  /** Processes that have loaded their code and wait to be started (the next restarts). */
  const spares: Array<Promise<NodeProcess>> = [];

  function spare(): void {
    const node = spawnNode(
      'test/helpers/schedule-server.ts',
      {
        ...process.env,
        NODE_ENV: 'test',
        ...SERVER_ENV,
        LOG_LEVEL: 'warn',
        ...databaseEnv(database.url!),
      },
      { ipc: true },
    );
    spawned.push(node);
    spares.push(lineOf(node, 'schedule server loaded').then(() => node));
  }

  async function lineOf(node: NodeProcess, msg: string): Promise<Record<string, any>> {
    for (;;) {
      const line = node.logs().find((l) => l.msg === msg);
      if (line) return line;
      if (node.child.exitCode !== null) throw new Error(`server exited: ${node.stderr()}`);
      await once(node.child.stdout!, 'data');
    }
  }

  /** A new server process on the database, at the clock's time. */
  async function spawn(): Promise<Server> {
    if (spares.length === 0) spare();
    const node = await spares.shift()!;
    node.child.send({ start: true, now });
    const ready = await lineOf(node, 'schedule server listening');
    const server = { node, url: ready.url as string };
    live.add(server);
    // The clock may have moved while it started.
    node.child.send({ now });
    return server;
  }

  let kills = 0;
  async function kill(server: Server): Promise<void> {
    kills++;
    live.delete(server);
    server.node.child.kill('SIGKILL');
    await server.node.exited;
  }

  /** Moves every live process's clock to `at`. */
  function tick(at: number): void {
    now = at;
    for (const { node } of live) if (node.child.connected) node.child.send({ now: at });
  }

  /** Resolves once every schedule has moved on to `next`, committed with its tasks. */
  async function movedOn(next: number): Promise<void> {
    await eventually(async () => {
      const { rows } = await client.query<{ n: number }>(
        'select count(*)::int as n from schedules where next_run_at = $1',
        [new Date(next)],
      );
      return rows[0]!.n === KEYS.length ? true : undefined;
    }, 30_000);
  }

  /**
   * Minute `n` comes: every live process reads it, and `victims` of them are killed a few
   * milliseconds apart from it (before, while or after they fire); once it has passed, each
   * is replaced by a new process.
   */
  async function minute(n: number, victims: number): Promise<void> {
    tick(m(n) + 100);
    const doomed = [...live].slice(0, victims);
    await Promise.all(
      doomed.map(async (server, i) => {
        await new Promise((resolve) => setTimeout(resolve, (i * 7 + n * 13) % 40));
        await kill(server);
      }),
    );
    await movedOn(m(n + 1));
    await Promise.all(doomed.map(() => spawn()));
  }

  async function occurrences(key: string): Promise<string[]> {
    const { rows } = await client.query<{ key: string }>(
      `select idempotency_key as key from tasks where schedule_key = $1 order by idempotency_key`,
      [key],
    );
    return rows.map((r) => r.key.slice(`schedule:${key}:`.length));
  }

  beforeAll(async () => {
    database = await freshDatabase();
    client = new pg.Client({ connectionString: database.url });
    await client.connect();
    // Every process the test starts loads its code at once, while the others do.
    for (let i = 0; i < PROCESSES; i++) spare();
  }, 60_000);
  afterAll(async () => {
    for (const node of spawned) node.child.kill('SIGKILL');
    await Promise.all(spawned.map((node) => node.exited));
    await client?.end();
    await database?.drop();
  });

  it('starts each occurrence once through kills and restarts, and what `missed` says after none ran', async () => {
    const [first] = await Promise.all([spawn(), spawn()]);
    const token = await readWriteToken();
    for (const key of KEYS) {
      const saved = await gqlAt(
        first!.url,
        UPSERT,
        {
          input: {
            key,
            cron: '* * * * *',
            kind: 'sleep',
            input: { ms: 0 },
            missed: key.toUpperCase(),
          },
        },
        token,
      );
      expect(saved.data.upsertSchedule.nextRunAt).toBe(iso(m(1)));
    }
    // Two processes over minutes 1 … 6, four over 7 … 12; some killed around a minute.
    for (let n = 1; n <= 6; n++) await minute(n, KILLS.get(n) ?? 0);
    await Promise.all([spawn(), spawn()]);
    for (let n = 7; n <= 12; n++) await minute(n, KILLS.get(n) ?? 0);
    // None: every process killed as minute 13 begins; two start again at 10:22:30.
    tick(m(13) - 1);
    await Promise.all([...live].map(kill));
    now = m(22) + 30_000;
    await Promise.all([spawn(), spawn()]);
    await movedOn(m(23));

    const upTo12 = Array.from({ length: 12 }, (_, i) => iso(m(i + 1)));
    expect(await occurrences('all')).toEqual([
      ...upTo12,
      ...Array.from({ length: 10 }, (_, i) => iso(m(i + 13))),
    ]);
    expect(await occurrences('once')).toEqual([...upTo12, iso(m(22))]);
    expect(await occurrences('skip')).toEqual(upTo12);
    // One task an occurrence: no two tasks of a schedule share an occurrence.
    const { rows } = await client.query<{ n: number }>(
      `select count(*)::int as n from tasks where schedule_key is not null`,
    );
    expect(rows[0]!.n).toBe(22 + 13 + 12);
    expect(kills).toBe(5 + 4);
  });
});
