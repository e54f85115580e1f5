import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_SCOPES, eventually } from '../../helpers/app.js';
import { type Cluster, spawnCluster } from '../../helpers/cluster.js';
import { backend } from '../../helpers/db.js';
import { gqlAt as graphql, type ServerProcess, spawnServer } from '../../helpers/process.js';

/**
 * A bulk cancel of 5 000 tasks — running in two worker processes, waiting for a person, and
 * waiting for a slot — from an API process (DESIGN §15): every task ends CANCELLED, and every
 * handler that was running, in either worker, is aborted for the cancel (and every task
 * claimed into a worker's local queue but not started is dropped for it, never started).
 */

const TOTAL = 5_000;
const START_MANY = `mutation($inputs: [StartTaskInput!]!) { startTasks(inputs: $inputs) { id } }`;
const CANCEL = `mutation($filter: TaskFilter!) { cancelTasks(filter: $filter) { matched cancelled } }`;

describe.skipIf(backend !== 'pg')('cancelTasks across processes', () => {
  let cluster: Cluster<[ServerProcess]>;
  let workers: ServerProcess[];
  let db: pg.Client;
  beforeAll(async () => {
    cluster = await spawnCluster(['api'] as const);
    const databaseUrl = cluster.database.url as string;
    // Debug logs carry each handler's abort and its cause.
    const env = { RUNNER_CONCURRENCY: '100', LOG_LEVEL: 'debug' };
    workers = await Promise.all([
      spawnServer({ role: 'worker', databaseUrl, env }),
      spawnServer({ role: 'worker', databaseUrl, env }),
    ]);
    db = new pg.Client({ connectionString: databaseUrl });
    await db.connect();
  }, 120_000);
  afterAll(async () => {
    await db?.end();
    await Promise.all((workers ?? []).map((w) => w.stop('SIGTERM')));
    await cluster?.stop();
  });

  it('cancels 5 000 running and waiting tasks and aborts every running handler', async () => {
    const [api] = cluster.servers;
    const token = await cluster.token('alice');
    // A fifth ask a person (approval: INPUT_REQUIRED), the rest sleep for an hour.
    for (let start = 0; start < TOTAL; start += 100) {
      const inputs = Array.from({ length: 100 }, (_, i) =>
        (start + i) % 5 === 0
          ? { kind: 'approval', input: { question: 'ok?' }, labels: { bulk: 'yes' } }
          : { kind: 'sleep', input: { ms: 3_600_000, steps: 1 }, labels: { bulk: 'yes' } },
      );
      const res = await graphql(api.url, START_MANY, { inputs }, token);
      expect(res.errors).toBeUndefined();
    }
    // Both workers run handlers, and some tasks wait for a person, before the cancel.
    await eventually(
      async () => {
        const { rows } = await db.query(
          `select count(distinct worker_id)::int as workers,
                count(*) filter (where status = 'input_required')::int as asking
         from tasks where worker_id is not null`,
        );
        return rows[0].workers === 2 && rows[0].asking > 0 ? true : undefined;
      },
      120_000,
      250,
    );

    const res = await graphql(api.url, CANCEL, { filter: { labels: { bulk: 'yes' } } }, token);
    expect(res.errors).toBeUndefined();
    expect(res.data.cancelTasks).toEqual({ matched: TOTAL, cancelled: TOTAL });

    const { rows } = await db.query(
      `select status, count(*)::int as n from tasks group by status order by status`,
    );
    expect(rows).toEqual([{ status: 'cancelled', n: TOTAL }]);
    // Every task a worker had claimed is one whose handler that worker aborted for the cancel,
    // or, claimed ahead into its local queue, one it dropped for the cancel unstarted.
    const claimed = await db.query(`select id, worker_id from tasks where worker_id is not null`);
    expect(claimed.rows.length).toBeGreaterThan(0);
    const stoppedBy = (msg: string) =>
      new Set(
        workers.flatMap((w) =>
          w
            .logs()
            .filter((l) => l.msg === msg && l.cause === 'cancelled')
            .map((l) => l.taskId as string),
        ),
      );
    await eventually(
      async () => {
        const aborted = stoppedBy('aborting handler');
        const dropped = stoppedBy('dropping queued task');
        return claimed.rows.every((r: { id: string }) => aborted.has(r.id) !== dropped.has(r.id))
          ? true
          : undefined;
      },
      120_000,
      500,
    );
    // No other cause stopped any of them, none of those dropped had started, and nothing is
    // left running in either worker.
    const handlers = stoppedBy('aborting handler');
    const started = new Set(
      workers.flatMap((w) =>
        w
          .logs()
          .filter((l) => l.msg === 'task claimed')
          .map((l) => l.taskId as string),
      ),
    );
    for (const id of stoppedBy('dropping queued task')) expect(started.has(id)).toBe(false);
    for (const id of handlers) expect(started.has(id)).toBe(true);
    for (const worker of workers) {
      const causes = worker
        .logs()
        .filter((l) => l.msg === 'aborting handler' || l.msg === 'dropping queued task')
        .map((l) => l.cause);
      expect(new Set(causes)).toEqual(new Set(['cancelled']));
    }
    await Promise.all(workers.map((w) => w.stop('SIGTERM')));
    // The runner logs "runner stopped" only when it had to abort tasks at shutdown.
    for (const worker of workers) {
      const stopped = worker.logs().filter((l) => l.msg === 'runner stopped');
      expect(stopped.map((l) => l.aborted)).toEqual([]);
    }
    // An admin sees the same counts for alice's tasks, and nothing left to cancel.
    const root = await cluster.token('root', ADMIN_SCOPES);
    const again = await graphql(
      api.url,
      CANCEL,
      { filter: { labels: { bulk: 'yes' }, owner: 'alice' } },
      root,
    );
    expect(again.data.cancelTasks).toEqual({ matched: TOTAL, cancelled: 0 });
  }, 300_000);
});
