import pg from 'pg';
import { describe, expect, it, onTestFinished } from 'vitest';
import { claimTasks } from '../../../src/tasks/sql/claim.js';
import { READY_CHANNEL } from '../../../src/tasks/sql/common.js';
import { eventually } from '../../helpers/app.js';
import { backend, kyselyOn } from '../../helpers/db.js';
import {
  alice,
  api,
  claimedBy,
  client,
  database,
  GET,
  row,
  startServer,
  startTask,
  threads,
  useProcessSuite,
} from '../../helpers/durable-process.js';
import { CANCEL_TASK as CANCEL } from '../../helpers/operations.js';
import { gqlAt } from '../../helpers/process.js';

/**
 * Server processes in their roles, sharing one Postgres database: a worker draining on
 * SIGTERM, a cancel from the API process reaching a worker's handler, and what each role
 * serves and runs. Postgres only: PGlite is in-process and cannot be shared between processes.
 */

describe.skipIf(backend === 'pglite')('durable execution across processes', () => {
  useProcessSuite();

  it('drains on SIGTERM: finishes what it can within the grace period, releases the rest uncounted, exits 0', async () => {
    // A long lease: whatever is claimable right after the exit was released, not lapsed.
    const w1 = await startServer('worker', {
      TASK_LEASE_MS: '30000',
      TASK_SHUTDOWN_GRACE_MS: '2000',
    });
    const long = await startTask('sleep', { ms: 3_600_000 });
    const waiting = await startTask('approval', { question: 'Deploy?' });
    await eventually(async () =>
      (await row(long)).worker_id && (await row(waiting)).status === 'input_required'
        ? true
        : undefined,
    );
    const quick = await startTask('sleep', { ms: 800 });
    await eventually(async () => ((await row(quick)).worker_id ? true : undefined));

    w1.child.kill('SIGTERM');
    expect(await w1.exited).toEqual({ code: 0, signal: null });

    expect(await row(quick)).toMatchObject({ status: 'completed', worker_id: null });
    // Given back without counting the attempt; the waiting task stays waiting, unleased.
    expect(await row(long)).toMatchObject({
      status: 'working',
      worker_id: null,
      lease_expires_at: null,
      attempt: 0,
    });
    expect(await row(waiting)).toMatchObject({
      status: 'input_required',
      worker_id: null,
      lease_expires_at: null,
      attempt: 0,
    });
    const leased = await client!.query(
      `select count(*)::int as n from tasks where worker_id is not null and status in ('working', 'input_required')`,
    );
    expect(leased.rows[0].n).toBe(0);
    expect(w1.logs().find((l) => l.msg === 'runner stopped')).toMatchObject({
      aborted: 2,
      released: 2,
    });

    // Any worker can take the released task at once (a 30 s lease would still be live had it
    // lapsed rather than been released): claim it the way a worker does.
    const db = kyselyOn(database!, 1);
    try {
      const claimed = await claimTasks(db, 'probe', ['sleep'], 10, 30_000);
      expect(claimed.map((r) => [r.id, r.attempt])).toEqual([[long, 1]]);
    } finally {
      await db.destroy();
    }
  });

  it('aborts a handler in a worker process when an API process cancels it, and the freed slot runs the next task', async () => {
    const worker = await startServer('worker', { RUNNER_CONCURRENCY: '1' });

    // An hour-long sleep holds the only slot; the primes task queues behind it.
    const hour = await startTask('sleep', { ms: 3_600_000 });
    await eventually(async () => ((await row(hour)).worker_id ? true : undefined));
    const idleThreads = threads(worker.child.pid!);
    const sieve = await startTask('primes', { limit: 1_000_000_000 });
    expect((await row(sieve)).attempt).toBe(0);

    const cancelledAt = Date.now();
    expect((await gqlAt(api.url, CANCEL, { id: hour }, alice)).data.cancelTask.status).toBe(
      'CANCELLED',
    );
    await eventually(async () => ((await row(sieve)).worker_id ? true : undefined));
    console.log(
      `[durable] cancel answered by the API process → the worker's freed slot claimed the next task in ${Date.now() - cancelledAt} ms`,
    );

    // The sieve runs in a worker thread; a cancel from the API process stops that thread.
    await eventually(async () => ((await row(sieve)).progress ?? 0) > 0 || undefined);
    expect(threads(worker.child.pid!)).toBeGreaterThan(idleThreads);
    const next = await startTask('sleep', { ms: 0 });
    expect((await gqlAt(api.url, CANCEL, { id: sieve }, alice)).data.cancelTask.status).toBe(
      'CANCELLED',
    );
    await eventually(
      async () => ((await row(next)).status === 'completed' ? true : undefined),
      15_000,
    );
    await eventually(async () => (threads(worker.child.pid!) <= idleThreads ? true : undefined));

    for (const id of [hour, sieve])
      expect(await row(id)).toMatchObject({ status: 'cancelled', result: null });
  });

  it('serves /healthz and /readyz on every role; api runs no tasks, worker serves no GraphQL or REST', async () => {
    // The news a runner wakes on to claim: once it is out, a runner in the API process would
    // be claiming, while the processes that may run the task have yet to start.
    const ready = new pg.Client({ connectionString: database!.url });
    onTestFinished(() => ready.end());
    await ready.connect();
    await ready.query(`listen ${READY_CHANNEL}`);
    const woken = new Promise<void>((resolve) =>
      ready.on('notification', (n) => n.payload === 'sleep' && resolve()),
    );
    const id = await startTask('sleep', { ms: 0 });
    await woken;
    expect(await row(id)).toMatchObject({ status: 'working', attempt: 0, worker_id: null });

    const [worker, all] = await Promise.all([startServer('worker'), startServer('all')]);
    await eventually(async () => ((await row(id)).status === 'completed' ? true : undefined));
    // Its one claim was theirs: the API process, first to hear of the task, never took it.
    expect(await claimedBy([worker, all], id, 1)).toBeDefined();

    for (const server of [api, worker, all]) {
      for (const path of ['/healthz', '/readyz']) {
        const response = await fetch(`${server.url}${path}`);
        expect(response.status, `${server.role} ${path}`).toBe(200);
      }
    }
    for (const server of [api, all]) {
      expect((await gqlAt(server.url, GET, { id }, alice)).data.task.status).toBe('COMPLETED');
      const rest = await fetch(`${server.url}/v1/jobs/${id}`, {
        headers: { authorization: `Bearer ${alice}` },
      });
      expect(rest.status).toBe(200);
    }
    const graphql = await fetch(`${worker.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${alice}` },
      body: JSON.stringify({ query: '{ __typename }' }),
    });
    expect(graphql.status).toBe(404);
    const rest = await fetch(`${worker.url}/v1/jobs/${id}`, {
      headers: { authorization: `Bearer ${alice}` },
    });
    expect(rest.status).toBe(404);
    expect(api.logs().some((l) => l.msg === 'task claimed')).toBe(false);
  });
});
