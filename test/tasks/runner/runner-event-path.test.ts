import type { KyselyPlugin, RootOperationNode } from 'kysely';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import type { TaskRow } from '../../../src/db/types.js';
import { TaskEvents } from '../../../src/tasks/events/hub.js';
import { subscribeToTask } from '../../../src/tasks/events/subscription.js';
import { KindRegistry } from '../../../src/tasks/kinds.js';
import { Runner } from '../../../src/tasks/runner/runner.js';
import { findStoredTask } from '../../../src/tasks/sql/find.js';
import type { Task } from '../../../src/tasks/task.js';
import { eventually, startTestApp, type TestApp } from '../../helpers/app.js';
import { gate, racer } from '../../helpers/runner-kinds.js';

/**
 * What lies between a task's start and its COMPLETED event in a process that runs it: one claim
 * (a claim that found fewer tasks than it asked for found them all, so none other is sent
 * while the outcome is written), the outcome's statement, and no read: the written row goes
 * to this process's watchers as it is. Runners built here, beside an api-only app, on a hub
 * whose reads the test counts.
 */

const alice = { id: 'alice', admin: false };
const log = pino({ level: 'silent' });

/**
 * The runner's claims and outcomes in the order they are sent; a claim as `claim` with the
 * number of tasks it returned once it is answered (`claim:1`).
 */
function statementLog(): { plugin: KyselyPlugin; sent: string[] } {
  const sent: string[] = [];
  const claims = new Map<unknown, number>();
  const plugin: KyselyPlugin = {
    transformQuery({ node, queryId }): RootOperationNode {
      const text = JSON.stringify(node);
      if (text.includes('taskhandle_claim_tasks')) {
        claims.set(queryId, sent.length);
        sent.push('claim');
      } else if (text.includes('as c(id, worker_id, attempt, ending')) sent.push('outcome');
      return node;
    },
    transformResult: async ({ result, queryId }) => {
      const at = claims.get(queryId);
      if (at !== undefined) {
        claims.delete(queryId);
        const found = result.rows.filter((row) => (row as { id?: unknown }).id != null).length;
        sent[at] = `claim:${found}`;
      }
      return result;
    },
  };
  return { plugin, sent };
}

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ env: { ROLE: 'api' }, kinds: [racer] });
});
afterAll(() => t?.stop());

/**
 * A hub of its own whose reads are counted, and a runner on it, started once the hub heard of
 * a task started: so the runner claims it on its start, and no NOTIFY wakes it meanwhile.
 */
async function runnerWithTask(workerId: string) {
  const reads: string[] = [];
  const hub = new TaskEvents(
    t.app.db.listener(log),
    (id) => {
      reads.push(id);
      return findStoredTask(t.app.db.kysely, id);
    },
    log,
  );
  await hub.start();
  const statements = statementLog();
  const runner = new Runner({
    db: t.app.db.kysely.withPlugin(statements.plugin),
    events: hub,
    kinds: new KindRegistry([racer]),
    log,
    workerId,
    concurrency: 4,
    leaseMs: 30_000,
    backstopMs: 600_000,
  });
  onTestFinished(async () => {
    await runner.stop(0);
    await hub.stop();
  });
  const heard = new Promise<void>((resolve) => {
    const off = hub.onReady(() => {
      off();
      resolve();
    });
  });
  const id = (await t.app.tasks.start(alice, { kind: 'racer', input: {} })).task.id;
  await heard;
  runner.start();
  await gate(id).reached;
  return { id, hub, reads, sent: statements.sent };
}

describe('the event path in a process that runs the task', () => {
  it('sends no other claim between the claim that found a lone task and its outcome', async () => {
    const { id, sent } = await runnerWithTask('path-claims');
    gate(id).release();
    await eventually(async () =>
      (await findStoredTask(t.app.db.kysely, id))?.status === 'completed' ? true : undefined,
    );
    // The claim found fewer than it asked for: all there was, so no other claim comes between
    // it and the outcome.
    expect(sent.slice(0, sent.indexOf('outcome') + 1)).toEqual(['claim:1', 'outcome']);
  });

  it('hands the completed row to a local subscriber without reading it back', async () => {
    const { id, hub, reads } = await runnerWithTask('path-reads');
    const events = await subscribeToTask(hub, id, alice.id);
    const first = await events.next();
    expect(first.value as Task).toMatchObject({ status: 'working' });
    const readsBefore = reads.filter((r) => r === id).length;
    gate(id).release();
    let last: Task | undefined;
    for await (const task of events) last = task;
    expect(last).toMatchObject({ status: 'completed', result: { finished: true } });
    expect(reads.filter((r) => r === id).length).toBe(readsBefore);
    // Its NOTIFY still comes, and costs no read either; a later read is the cached final row.
    const row = (await hub.read(id)) as TaskRow;
    expect(row).toMatchObject({ status: 'completed', version: last!.version });
    expect(reads.filter((r) => r === id).length).toBe(readsBefore);
  });
});
