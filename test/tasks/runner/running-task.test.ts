import { randomUUID } from 'node:crypto';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineTaskKind, KindRegistry, type TaskKind } from '../../../src/tasks/kinds.js';
import { OutcomeRecorder } from '../../../src/tasks/runner/outcome.js';
import { RunningTask } from '../../../src/tasks/runner/running-task.js';
import type { RunningTaskOptions } from '../../../src/tasks/runner/task-host.js';
import { claimTasks } from '../../../src/tasks/sql/claim.js';
import { ChildStarts } from '../../../src/tasks/steps/child-starts.js';
import { startTestApp, type TestApp } from '../../helpers/app.js';
import { untilAborted } from '../../helpers/kinds.js';

/**
 * A RunningTask reads its lease from the rows its watch delivers. A claim does not bump the
 * version, so a row read just before the claim (without this lease) can arrive after it, at
 * the claimed version: that is no news, and must not stop the handler. (It did: an approval
 * answered at once then sat in WORKING until the lease ran out.)
 */

let aborted: unknown;
let handlerRunning: () => void;
/** Settles once the handler listens on its signal: from then on an abort reaches it at once. */
const running = new Promise<void>((resolve) => {
  handlerRunning = resolve;
});
const hold = defineTaskKind({
  name: 'held-here',
  description: 'waits until aborted, and keeps why',
  inputSchema: { type: 'object' },
  run: ({ signal }) => {
    const settled = untilAborted(signal, (reason) => {
      aborted = reason;
    });
    handlerRunning();
    return settled;
  },
});

/** Asks for input, then returns what it was given. */
const asks = defineTaskKind({
  name: 'asks-here',
  description: 'asks for input once',
  inputSchema: { type: 'object' },
  run: (ctx) => ctx.requestInput({ key: 'go', message: 'Go on?' }),
});

let t: TestApp;
beforeAll(async () => {
  // No runner of its own (ROLE=api): the test claims and runs the task itself.
  t = await startTestApp({ kinds: [hold, asks], env: { ROLE: 'api' } });
});

/** A task of `kind` started over GraphQL and claimed by the test, run as a RunningTask. */
async function claimAndRun(kind: TaskKind<any, any>, host: RunningTaskOptions['host']) {
  const token = await t.token('alice');
  const started = await t.gql(
    `mutation { startTask(input: { kind: "${kind.name}", input: {} }) { id } }`,
    {},
    token,
  );
  const id = started.data.startTask.id as string;
  const db = t.app.db.kysely;
  const workerId = randomUUID();
  const [row] = await claimTasks(db, workerId, [kind.name], 1, 30_000);
  expect(row?.id).toBe(id);
  const task = new RunningTask(row!, workerId, Date.now(), {
    db,
    events: t.app.events,
    log: pino({ level: 'silent' }),
    leaseMs: 30_000,
    progressThrottleMs: 0,
    outcomes: new OutcomeRecorder(db, 30_000),
    host,
    children: new ChildStarts(db, new KindRegistry([kind]), {
      defaultTtlMs: 60_000,
      minTtlMs: 1_000,
      maxTtlMs: 60_000,
    }),
    publicUrl: () => 'http://127.0.0.1:4000',
  });
  task.start(kind);
  return { task, row: row! };
}

const idle = { slotFreed: () => {}, slotTaken: () => {}, ended: () => {}, dueAt: () => {} };
afterAll(() => t?.stop());

describe('RunningTask', () => {
  it('ignores a row of the claimed version read before the claim; a newer one under another lease stops it', async () => {
    const { task, row } = await claimAndRun(hold, idle);
    await running;

    // An abort reaches a running handler synchronously: had either row stopped it, `aborted`
    // would be set when `changed` returns.
    task.changed({ ...row, worker_id: null, lease_expires_at: null, attempt: row.attempt - 1 });
    task.changed({ ...row });
    expect(aborted).toBeUndefined();

    task.changed({ ...row, version: row.version + 1, worker_id: randomUUID() });
    await task.done;
    expect(aborted).toMatchObject({ cause: 'lease-lost' });
  });

  it('gives its slot up while it waits for input, and takes it again when answered', async () => {
    const slots: string[] = [];
    let paused!: () => void;
    const waiting = new Promise<void>((resolve) => (paused = resolve));
    const { task, row } = await claimAndRun(asks, {
      ...idle,
      slotFreed: (_task, returned) => {
        slots.push(returned ? 'returned' : 'freed');
        if (!returned) paused();
      },
      slotTaken: (taken) => {
        expect(taken).toBe(task);
        slots.push('taken');
      },
    });
    await waiting;
    expect(task.busy).toBe(false);
    // The answer arrives as a newer row, WORKING under the same lease, with the answer stored.
    task.changed({ ...row, version: row.version + 10, answers: { go: 'yes' } });
    expect(slots).toEqual(['freed', 'taken']);
    expect(task.busy).toBe(true);
    await task.done;
    expect(slots).toEqual(['freed', 'taken', 'returned']);
  });
});
