import { createClient } from 'graphql-ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { eventually } from '../../helpers/app.js';
import { backend } from '../../helpers/db.js';
import {
  ANSWER,
  alice,
  api,
  claimant,
  claimedBy,
  GET,
  kept,
  kill,
  long,
  row,
  SHORT_LEASE_MS,
  short,
  startServer,
  startTask,
  useProcessSuite,
} from '../../helpers/durable-process.js';
import { gqlAt, type ServerProcess } from '../../helpers/process.js';

/** Heartbeats a second apart: a stall of a busy machine under two seconds does not lose it. */
const MEDIUM_LEASE_MS = 3_000;

/**
 * Durable execution across real, separate server processes started as users start them,
 * sharing one Postgres database: workers lost with SIGKILL, and workers paused or draining
 * past a short lease. PGlite is in-process and cannot be shared between processes, so this
 * file runs on Postgres only.
 */

describe.skipIf(backend === 'pglite')('durable execution across processes', () => {
  useProcessSuite();

  describe('workers lost with SIGKILL', () => {
    let victim: ServerProcess;
    let survivor: ServerProcess;
    beforeAll(async () => {
      // The survivor renews the longer lease: what is tried is the victim's lapse, not its own.
      [victim, survivor] = await Promise.all([
        startServer('worker', short),
        startServer('worker', { TASK_LEASE_MS: String(MEDIUM_LEASE_MS) }),
      ]);
      kept.add(victim).add(survivor);
    });
    afterAll(() => kill(victim, survivor));

    it('reclaims and completes the task of a worker killed with SIGKILL once its lease lapses', async () => {
      const runMs = 1_500;
      // The victim claims it: the survivor is stopped until it has.
      survivor.child.kill('SIGSTOP');
      const id = await startTask('sleep', { ms: runMs, steps: 30 });
      await claimedBy([victim], id, 1);
      survivor.child.kill('SIGCONT');
      // Mid-task: claimed, and reporting progress.
      await eventually(async () => ((await row(id)).progress ?? 0) > 0 || undefined);
      expect(await row(id)).toMatchObject({ status: 'working', attempt: 1 });

      const killedAt = Date.now();
      victim.child.kill('SIGKILL');
      let reclaimedAfter: number | undefined;
      const done = await eventually(
        async () => {
          const now = await row(id);
          if (reclaimedAfter === undefined && now.attempt === 2)
            reclaimedAfter = Date.now() - killedAt;
          return now.status === 'working' ? undefined : now;
        },
        20_000,
        10,
      );
      const completedAfter = Date.now() - killedAt;
      expect((await victim.exited).signal).toBe('SIGKILL');

      expect(done).toMatchObject({ status: 'completed', attempt: 2, worker_id: null, error: null });
      expect(done.result.sleptMs).toBeGreaterThanOrEqual(runMs);
      expect(await claimedBy([survivor], id, 2)).toBe(survivor);
      expect(reclaimedAfter).toBeDefined();
      console.log(
        `[durable] TASK_LEASE_MS=${SHORT_LEASE_MS}: SIGKILL → reclaimed by the other worker in ${reclaimedAfter} ms, ` +
          `→ COMPLETED in ${completedAfter} ms (of which the re-run itself sleeps ${runMs} ms)`,
      );
      // The API process sees the same final state.
      expect((await gqlAt(api.url, GET, { id }, alice)).data.task).toMatchObject({
        status: 'COMPLETED',
        result: { sleptMs: done.result.sleptMs },
      });
    });

    it('keeps an answer given while no worker lives, and the next worker resumes with it at once', async () => {
      const id = await startTask('approval', { question: 'Ship it?' });
      await eventually(async () =>
        (await gqlAt(api.url, GET, { id }, alice)).data.task.status === 'INPUT_REQUIRED'
          ? true
          : undefined,
      );
      expect(await claimedBy([survivor], id, 1)).toBe(survivor);

      await kill(survivor); // the last worker
      const answered = await gqlAt(
        api.url,
        ANSWER,
        { id, key: 'decision', value: { approved: true, comment: 'ship it' } },
        alice,
      );
      expect(answered.errors).toBeUndefined();
      expect(answered.data.provideTaskInput.status).toBe('WORKING');

      // Nobody runs it: the API process runs no tasks, even once the dead worker's lease has lapsed.
      await eventually(async () =>
        (await row(id)).lease_expires_at!.getTime() < Date.now() - SHORT_LEASE_MS
          ? true
          : undefined,
      );
      expect(await row(id)).toMatchObject({ status: 'working', attempt: 1, result: null });

      const ws = createClient({
        url: api.wsUrl,
        webSocketImpl: WebSocket,
        connectionParams: { authorization: `Bearer ${alice}` },
      });
      const events: any[] = [];
      const followed = new Promise<unknown>((resolve) =>
        ws.subscribe(
          {
            query: `subscription($id: ID!) { taskUpdated(id: $id) { status version result } }`,
            variables: { id },
          },
          {
            next: (value) => events.push(value.data),
            error: resolve,
            complete: () => resolve(undefined),
          },
        ),
      );
      await eventually(async () => (events.length > 0 ? true : undefined)); // subscribed: the current state came
      const w3 = await startServer('worker', short);
      const error = await followed;
      await ws.dispose();
      expect(error).toBeUndefined();
      const statuses = events.map((e) => e.taskUpdated.status);
      expect(statuses).not.toContain('INPUT_REQUIRED'); // the re-run did not ask again
      expect(events.at(-1).taskUpdated).toMatchObject({
        status: 'COMPLETED',
        result: { approved: true, comment: 'ship it' },
      });
      expect(await claimedBy([w3], id, 2)).toBe(w3);
    });
  });

  it('aborts the handler of a worker paused past its lease, and its late writes change nothing', async () => {
    const paused = await startServer('worker', short);
    const id = await startTask('sleep', { ms: 4_000, steps: 40 });
    await claimedBy([paused], id, 1);
    await eventually(async () => ((await row(id)).progress ?? 0) > 0 || undefined);

    paused.child.kill('SIGSTOP');
    // What is tried is the paused worker's lapsed lease, not the one of the worker taking over.
    const other = await startServer('worker', long);
    await eventually(async () => (claimant([other], id, 2) ? true : undefined), 15_000);
    paused.child.kill('SIGCONT');
    await eventually(async () =>
      paused
        .logs()
        .some((l) => l.msg === 'aborting handler' && l.taskId === id && l.cause === 'lease-lost')
        ? true
        : undefined,
    );
    const done = await eventually(async () => {
      const now = await row(id);
      return now.status === 'working' ? undefined : now;
    }, 15_000);
    expect(done).toMatchObject({ status: 'completed', attempt: 2 });
    expect(done.result.sleptMs).toBeGreaterThanOrEqual(4_000);
    expect(paused.logs().filter((l) => l.msg === 'task claimed' && l.taskId === id)).toHaveLength(
      1,
    );
  });

  describe('two workers on a lease of a few seconds', () => {
    let w1: ServerProcess;
    let w2: ServerProcess;
    beforeAll(async () => {
      const env = { TASK_LEASE_MS: String(MEDIUM_LEASE_MS), TASK_SHUTDOWN_GRACE_MS: '10000' };
      [w1, w2] = await Promise.all([startServer('worker', env), startServer('worker', env)]);
      kept.add(w1).add(w2);
    });
    afterAll(() => kill(w1, w2));

    it('keeps renewing the lease through the grace period of SIGTERM, so a draining task is not run twice', async () => {
      // Runs for twice the lease, all of it after SIGTERM.
      const id = await startTask('sleep', { ms: 2 * MEDIUM_LEASE_MS });
      const draining = await eventually(async () => claimant([w1, w2], id, 1));
      const other = draining === w1 ? w2 : w1;
      draining.child.kill('SIGTERM');
      expect(await draining.exited).toEqual({ code: 0, signal: null });
      expect(await row(id)).toMatchObject({ status: 'completed', attempt: 1, worker_id: null });
      expect(claimant([other], id, 2)).toBeUndefined();
    });
  });
});
