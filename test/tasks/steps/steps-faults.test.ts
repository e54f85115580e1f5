import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../../helpers/app.js';
import { backend, freshDatabaseAndClient, type TestDatabase } from '../../helpers/db.js';
import { gqlAt, type ServerProcess, spawnServer } from '../../helpers/process.js';
import { readWriteToken } from '../../helpers/secret.js';
import { proxyFor, type TcpProxy } from '../../helpers/tcp-proxy.js';

/**
 * The journal through database faults between a real server process and Postgres (a TCP
 * proxy): every connection reset mid-query, as when Postgres restarts, and answers lost after
 * their commit. A journalled step is never started again, and a signal sent meanwhile (retried
 * by its sender until answered) is never lost. Postgres only: PGlite has no network.
 */

const START = `mutation($input: StartTaskInput!) { startTask(input: $input) { id } }`;
const SIGNAL = `mutation($id: ID!) { signalTask(id: $id, name: "go", payload: { n: 42 }) { id } }`;

let database: TestDatabase;
let direct: pg.Client;
let proxy: TcpProxy;
let server: ServerProcess;
let token: string;

const journalled = async (id: string) =>
  (
    await direct.query<{ name: string; ended_at: Date }>(
      `select name, ended_at from task_steps where task_id = $1 and state = 'COMPLETED'`,
      [id],
    )
  ).rows;

/** Waits until the task has at least `n` COMPLETED journal entries. */
const journalReaches = (id: string, n: number) =>
  eventually(async () => ((await journalled(id)).length >= n ? true : undefined), 30_000);

/** Sends a GraphQL operation through the server until it is answered without an error. */
async function untilAnswered(query: string, variables: Record<string, unknown>) {
  for (;;) {
    const res = await gqlAt(server.url, query, variables, token).catch(() => undefined);
    if (res && !res.errors) return res;
    if (res?.errors) expect(res.errors[0]?.extensions?.code).toBe('SERVICE_UNAVAILABLE');
  }
}

describe.skipIf(backend === 'pglite')(
  'the journal through database faults',
  { timeout: 120_000 },
  () => {
    beforeAll(async () => {
      ({ database, client: direct } = await freshDatabaseAndClient());
      token = await readWriteToken();
      proxy = await proxyFor(database.url!);
      server = await spawnServer({
        role: 'all',
        databaseUrl: proxy.via(database.url!),
        env: {
          DB_STATEMENT_TIMEOUT_MS: '1000',
          DB_CONNECT_TIMEOUT_MS: '500',
          TASK_LEASE_MS: '1500',
          LOG_LEVEL: 'debug',
        },
      });
    });
    afterAll(async () => {
      await server?.stop('SIGKILL');
      await proxy?.close();
      await direct?.end();
      await database?.drop();
    });

    it('never starts a journalled step again, and keeps a signal sent through the faults', async () => {
      const started = await untilAnswered(START, {
        input: {
          kind: 'pipeline',
          input: { stages: 8, stageMs: 150, signal: 'go' },
          retry: { maxAttempts: 20, initialDelayMs: 50, maxDelayMs: 200 },
        },
      });
      const id = started.data.startTask.id as string;

      // Connections reset mid-run, as a Postgres restart does; the signal (the pipeline waits
      // for it after stage 1) sent through it.
      await journalReaches(id, 1);
      proxy.reset();
      await untilAnswered(SIGNAL, { id });
      // An answer lost after its commit: the next step's commit reaches Postgres (seen here on a
      // direct connection) while its answer is held back, then the connections reset.
      await journalReaches(id, 4);
      // Deafened only once the run has had the answer to the fourth entry's commit (it logs
      // stage-4's start after it), so the answer held back is a later step's; and only on the
      // connections open now, so a step that needs a new connection meanwhile still commits.
      await eventually(
        async () =>
          server
            .logs()
            .some((l) => l.msg === 'step started' && l.taskId === id && l.step === 'stage-4')
            ? true
            : undefined,
        30_000,
      );
      proxy.deafen({ openOnly: true });
      await journalReaches(id, 5);
      proxy.reset();
      proxy.restore();
      await journalReaches(id, 6);
      proxy.reset();

      const done = await eventually(async () => {
        const { rows } = await direct.query<{ status: string; result: any }>(
          'select status, result from tasks where id = $1',
          [id],
        );
        return rows[0]?.status === 'working' ? undefined : rows[0];
      }, 60_000);
      expect(done).toMatchObject({ status: 'completed', result: { signal: { n: 42 } } });
      expect(done!.result.stages).toHaveLength(8);

      // No step was started after its entry was committed (same machine, one clock).
      const steps = await journalled(id);
      // Log lines are written in batches (every 100 ms at the latest).
      const starts = await eventually(async () => {
        const lines = server.logs().filter((l) => l.msg === 'step started' && l.taskId === id);
        return lines.length >= 8 ? lines : undefined;
      });
      for (const l of starts) expect(typeof l.time).toBe('number');
      const startedAgain = starts.filter((l) => {
        const entry = steps.find((s) => s.name === l.step);
        return entry && l.time > entry.ended_at.getTime();
      });
      expect(startedAgain).toEqual([]);
      expect(server.child.exitCode).toBeNull();
    });
  },
);
