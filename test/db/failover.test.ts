import { EventEmitter, once } from 'node:events';
import { createClient } from 'graphql-ws';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { eventually } from '../helpers/app.js';
import { backend } from '../helpers/db.js';
import {
  FAILOVER_LEASE_MS,
  type FailoverRig,
  intoReadOnlyWindow,
  loggedAfter,
  type StoredTask,
  settledTasks,
  startFailoverRig,
  untilReady,
  warnings,
} from '../helpers/failover.js';
import { Load } from '../helpers/failover-load.js';
import { FOLLOW_VERSIONS } from '../helpers/operations.js';
import { gqlAt } from '../helpers/process.js';

/**
 * A Postgres failover as a managed Postgres does it, to three processes (api, worker, all)
 * under load: the database's name points for a while at a standby (the primary lost, its
 * standby not yet promoted), then at a writable primary — the old one again, or the standby
 * promoted. The read-only window answers SERVICE_UNAVAILABLE / 503 only; the service recovers
 * by itself once the name points at a writable primary, whether the move cuts the connections
 * open to the standby (a proxy, a crash) or keeps them (a DNS change); with synchronous
 * replication nothing acknowledged is lost. Postgres only: separate processes, real clusters
 * (initdb, pg_basebackup, pg_ctl promote). The figures measured are printed, not asserted.
 */

const START = `mutation($input: StartTaskInput!) { startTask(input: $input) { id } }`;

let rig: FailoverRig;
let load: Load;
/** Where this test's answers and each process's log lines begin. */
let before: number;
let logsFrom: number[];

/** Starts the load and resolves once every face of both processes has served it. */
async function serving(): Promise<void> {
  const from = Date.now();
  load = new Load(rig);
  await load.until(() => load.recoveredAfter(from) !== undefined);
  before = load.answers.length;
  logsFrom = Object.values(rig.servers).map((s) => s.logs().length);
}

/** Waits for every face to serve, and every process to be ready, after `since`: the times. */
async function recovery(since: number): Promise<string> {
  await load.until(() => load.recoveredAfter(since) !== undefined);
  const served = load.recoveredAfter(since)!;
  // The worker too, which no request of the load reaches.
  await Promise.all(Object.values(rig.servers).map((s) => untilReady(s.url)));
  return `served again after ${served} ms, every process ready after ${Date.now() - since} ms`;
}

/**
 * Stops the load and checks what it saw: no answer but a success or SERVICE_UNAVAILABLE, and
 * every acknowledged start (and `also`) stored on the primary at `url` and completed.
 */
async function verdict(url: string, also: string[] = []): Promise<StoredTask[]> {
  await load.stop();
  expect(load.answers.slice(before).filter((a) => a.outcome === 'other')).toEqual([]);
  const acknowledged = [...also, ...load.acknowledged];
  const tasks = await settledTasks(url, acknowledged);
  expect(tasks.map((t) => t.id).sort()).toEqual(acknowledged.sort());
  expect(tasks.filter((t) => t.status !== 'completed')).toEqual([]);
  for (const s of Object.values(rig.servers)) {
    expect(s.child.exitCode).toBeNull();
    // A 503 is an answer the server meant: its request line is a warning, not an error.
    const refusals = s.logs().filter((l) => l.msg === 'request' && l.res?.statusCode === 503);
    expect(refusals.filter((l) => l.level !== 40)).toEqual([]);
  }
  return tasks;
}

function report(title: string, since: number, times: string, tasks: StoredTask[]): void {
  const answers = load.answers.slice(before);
  const servers = Object.values(rig.servers);
  const logged = servers.map((s, i) => [s.role, warnings(s, logsFrom[i])]);
  console.log(
    `[failover] ${title}: ${times}; ${answers.length} answers, ` +
      `${answers.filter((a) => a.outcome === 'unavailable').length} SERVICE_UNAVAILABLE/503, ` +
      `${answers.filter((a) => a.outcome === 'other').length} other; ` +
      `${tasks.length} acknowledged tasks, none lost, ${tasks.filter((t) => t.attempt > 1).length} run again; ` +
      `LISTEN back: ${loggedAfter(rig, 'listening connection restored', since)}; ` +
      `warn/error lines: ${JSON.stringify(Object.fromEntries(logged))}`,
  );
}

describe.skipIf(backend === 'pglite')('a Postgres failover', { timeout: 180_000 }, () => {
  let starting: Promise<FailoverRig> | undefined;
  beforeAll(async () => {
    // Synchronous: the primary's commits wait for the standby, so promoting it loses none.
    starting = startFailoverRig(true);
    rig = await starting;
  }, 180_000);
  afterAll(async () => {
    await load?.stop();
    // Also when the start outlived beforeAll: its clusters and processes are stopped once up.
    await starting?.then(
      (started) => started.stop(),
      () => {},
    );
  });

  it.each([
    ['keeps', false],
    ['cuts', true],
  ])(
    'answers 503 / SERVICE_UNAVAILABLE only while the name points at a standby, and recovers by itself when it moves back and %s the connections',
    async (_, cut) => {
      try {
        await serving();
        // The name reaches the standby; what was open to the primary is cut (it went away).
        rig.proxy.retarget(rig.pg.standbyUrl, { cut: true });
        await intoReadOnlyWindow(rig, load, load.answers.length, logsFrom);
        for (const s of Object.values(rig.servers))
          expect((await fetch(`${s.url}/readyz`)).status).toBe(503);

        const switchedAt = Date.now();
        const open = rig.proxy.open;
        rig.proxy.retarget(rig.pg.primaryUrl, { cut });
        const times = `${open} connections open to the standby at the switch; ${await recovery(switchedAt)}`;
        // Workers claim again: a task started after the switch runs.
        const after = load.answers.find((a) => a.sentAt >= switchedAt && a.id)!;
        expect((await settledTasks(rig.pg.primaryUrl, [after.id!]))[0]?.status).toBe('completed');
        const tasks = await verdict(rig.pg.primaryUrl);
        report(
          `read-only window, moved back ${cut ? 'cutting' : 'keeping'} connections`,
          switchedAt,
          times,
          tasks,
        );
      } finally {
        await load.stop();
        // The next test starts on the primary, whatever became of this one.
        rig.proxy.retarget(rig.pg.primaryUrl, { cut: true });
      }
    },
  );

  it('loses nothing acknowledged when the primary crashes and its synchronous standby is promoted', async () => {
    const { api, all } = rig.servers;
    const ws = createClient({
      url: all.wsUrl,
      webSocketImpl: WebSocket,
      retryAttempts: 0,
      connectionParams: { authorization: `Bearer ${rig.token}` },
    });
    const standby = new pg.Client({ connectionString: rig.pg.standbyUrl });
    await standby.connect();
    try {
      await serving();
      // A task running when the primary goes, longer than its lease, followed on another process.
      const started = await gqlAt(
        api.url,
        START,
        { input: { kind: 'sleep', input: { ms: 2 * FAILOVER_LEASE_MS, steps: 30 } } },
        rig.token,
      );
      const id = started.data.startTask.id as string;
      const statuses: string[] = [];
      const seen = new EventEmitter();
      const final = new Promise<string | undefined>((resolve, reject) => {
        ws.subscribe<{ taskUpdated: { status: string } }>(
          { query: FOLLOW_VERSIONS, variables: { id } },
          {
            next: ({ data }) => {
              if (data) statuses.push(data.taskUpdated.status);
              seen.emit('status');
            },
            error: reject,
            complete: () => resolve(statuses.at(-1)),
          },
        );
      });
      // Progress reported: a handler runs it under a lease.
      while (statuses.filter((s) => s === 'WORKING').length < 2) await once(seen, 'status');

      await rig.pg.crashPrimary();
      rig.proxy.retarget(rig.pg.standbyUrl, { cut: true });
      const crashedAt = Date.now();
      await intoReadOnlyWindow(rig, load, load.answers.length, logsFrom);
      // The standby is read-only, not gone: it shows the running task's lease lapse.
      await eventually(
        async () => {
          const { rows } = await standby.query(
            'select lease_expires_at < now() as lapsed from tasks where id = $1',
            [id],
          );
          return rows[0]?.lapsed ? true : undefined;
        },
        60_000,
        100,
      );
      const windowMs = Date.now() - crashedAt;

      const promotingAt = Date.now();
      await rig.pg.promote();
      const times = await recovery(promotingAt);
      expect(await final).toBe('COMPLETED');
      const finalMs = Date.now() - promotingAt;
      const tasks = await verdict(rig.pg.standbyUrl, [id]);
      // Its lease lapsed while the store was read-only (its handler was stopped): run again.
      expect(tasks.find((t) => t.id === id)!.attempt).toBeGreaterThanOrEqual(2);
      report(
        `crash, read-only standby for ${windowMs} ms, then pg_ctl promote`,
        promotingAt,
        `${times} (from pg_ctl promote), the subscriber had COMPLETED after ${finalMs} ms`,
        tasks,
      );
    } finally {
      await load.stop();
      await ws.dispose();
      await standby.end();
    }
  });
});
