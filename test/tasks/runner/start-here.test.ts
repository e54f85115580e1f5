import { sql } from 'kysely';
import pino from 'pino';
import { afterAll, beforeAll, beforeEach, describe, expect, it, onTestFinished } from 'vitest';
import { TaskEvents } from '../../../src/tasks/events/hub.js';
import { READY_CHANNEL } from '../../../src/tasks/sql/common.js';
import { findStoredTask } from '../../../src/tasks/sql/find.js';
import { eventually, startTestApp, type TestApp } from '../../helpers/app.js';
import { gate, racer } from '../../helpers/runner-kinds.js';

/**
 * A task started in a process that runs its kind, with a slot free and nothing waiting for one,
 * is inserted already claimed by that process and runs at once (docs/kinds.md); otherwise it
 * waits for a claim, and the workers are woken for it. One slot (RUNNER_CONCURRENCY=1), so a
 * running task keeps the next one waiting; a hub of the test's own hears the workers' news.
 */

const log = pino({ level: 'silent' });
const START = `mutation($input: StartTaskInput!) { startTask(input: $input) { id status attempt version } }`;

let t: TestApp;
let alice: string;
beforeAll(async () => {
  t = await startTestApp({ env: { RUNNER_CONCURRENCY: '1' }, kinds: [racer] });
  alice = await t.token('alice');
});
afterAll(() => t?.stop());
// A start is its own claim only while the runner knows no task waits for a slot: not before
// its first claim pass has come back (still out on a loaded machine when the app answers),
// nor while a pass a previous test caused is out. Its `reserve` says when: asked, and the
// slot handed back unused (which claims nothing once no task waits).
beforeEach(() =>
  eventually(async () => {
    const probe = t.app.runner!.reserve('racer');
    probe?.abandoned();
    return probe ? true : undefined;
  }),
);

/** The kinds the workers are told of; `settled()` waits until all news sent so far is heard. */
async function workersNews() {
  const kinds: string[] = [];
  const hub = new TaskEvents(
    t.app.db.listener(log),
    (id) => findStoredTask(t.app.db.kysely, id),
    log,
  );
  let marks = 0;
  hub.onReady((kind) => kinds.push(kind));
  await hub.start({ work: true });
  onTestFinished(() => hub.stop());
  return {
    kinds,
    /** Notifications arrive in commit order: once this mark is heard, all before it were. */
    async settled(): Promise<string[]> {
      const mark = `mark-${++marks}`;
      await sql`select pg_notify(${READY_CHANNEL}, ${mark})`.execute(t.app.db.kysely);
      await eventually(async () => (kinds.includes(mark) ? true : undefined));
      return kinds.filter((kind) => !kind.startsWith('mark-'));
    },
  };
}

async function start(input: Record<string, unknown> = {}) {
  const response = await t.gql(START, { input: { kind: 'racer', input: {}, ...input } }, alice);
  expect(response.errors).toBeUndefined();
  return response.data.startTask as { id: string; attempt: number; version: number };
}

const stored = (id: string) => findStoredTask(t.app.db.kysely, id);
const completed = (id: string) =>
  eventually(async () => {
    const row = await stored(id);
    return row?.status === 'completed' ? row : undefined;
  });

describe('a task started where a slot is free for it', () => {
  it('is inserted claimed and runs at once, without waking a worker, and is answered as accepted', async () => {
    const news = await workersNews();
    const task = await start();
    expect(task).toMatchObject({ attempt: 0, version: 1 });
    await gate(task.id).reached;
    expect(await news.settled()).toEqual([]);
    expect(await stored(task.id)).toMatchObject({ attempt: 1, worker_id: expect.any(String) });
    gate(task.id).release();
    expect(await completed(task.id)).toMatchObject({ attempt: 1, version: 2 });
  });

  it('waits for a claim when every slot is busy, and the workers are told of it', async () => {
    const news = await workersNews();
    const running = await start();
    await gate(running.id).reached;
    const waiting = await start();
    expect(await news.settled()).toEqual(['racer']);
    expect(await stored(waiting.id)).toMatchObject({ attempt: 0, worker_id: null });
    gate(running.id).release();
    await gate(waiting.id).reached;
    gate(waiting.id).release();
    await completed(running.id);
    expect(await completed(waiting.id)).toMatchObject({ attempt: 1 });
  });

  it('gives the slot back when the start replays an idempotency key', async () => {
    const first = await start({ idempotencyKey: 'start-here-replay' });
    gate(first.id).release();
    await completed(first.id);
    const replay = await start({ idempotencyKey: 'start-here-replay' });
    expect(replay.id).toBe(first.id);
    // Had the replay kept the one slot, the next task would wait for a claim that never comes.
    const news = await workersNews();
    const next = await start();
    await gate(next.id).reached;
    expect(await news.settled()).toEqual([]);
    gate(next.id).release();
    await completed(next.id);
  });
});
