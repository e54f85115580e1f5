import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ChildTaskError, defineTaskKind } from '../../../src/tasks/kinds.js';
import { eventually, startTestApp, type TestApp } from '../../helpers/app.js';

/** Child tasks (DESIGN §16): fan-out and in, failures, a crash between start and wait, cancel. */

const ALICE = { id: 'alice', admin: false };

/** Starts a failing child and catches its failure. */
const catcher = defineTaskKind<Record<string, never>, unknown>({
  name: 'catcher',
  description: 'catches a failed child',
  inputSchema: { type: 'object' },
  async run(ctx) {
    const child = await ctx.startChild('doomed', 'sleep', { ms: 0, fail: 'no luck' });
    try {
      await child.result();
      return { caught: null };
    } catch (err) {
      if (!(err instanceof ChildTaskError)) throw err;
      return {
        caught: { code: err.code, childId: err.childId, status: err.status, error: err.error },
      };
    }
  },
});

/** Starts three children, then fails its first attempt before waiting (a crash in between). */
const crashy = defineTaskKind<Record<string, never>, unknown>({
  name: 'crashy',
  description: 'fails between starting children and waiting for them',
  inputSchema: { type: 'object' },
  retry: { maxAttempts: 3, initialDelayMs: 10 },
  async run(ctx) {
    const children = await Promise.all(
      [1, 2, 3].map((n) => ctx.startChild(`c${n}`, 'sleep', { ms: 0 })),
    );
    if (ctx.attempt === 1) throw new Error('crash after starting the children');
    return Promise.all(children.map((c) => c.result()));
  },
});

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ kinds: [catcher, crashy] });
});
afterAll(() => t?.stop());

const finished = (id: string) =>
  eventually(async () => {
    const task = await t.app.tasks.get(ALICE, id);
    return task && task.status !== 'working' ? task : undefined;
  });

const childrenOf = async (id: string) =>
  (await t.app.tasks.tree.children(ALICE, id, { first: 100 })).tasks;

describe('child tasks', () => {
  it('fans out and in: the parent gets every child result, the children name their parent', async () => {
    const { task } = await t.app.tasks.start(ALICE, {
      kind: 'pipeline',
      input: { stages: 1, children: 20, childMs: 20 },
    });
    const done = await finished(task.id);
    expect(done.status).toBe('completed');
    expect((done.result as { children: unknown[] }).children).toHaveLength(20);
    const children = await childrenOf(task.id);
    expect(children).toHaveLength(20);
    for (const child of children) {
      expect(child).toMatchObject({ parentId: task.id, owner: 'alice', status: 'completed' });
      expect(child.expiresAt.getTime()).toBeLessThanOrEqual(task.expiresAt.getTime());
    }
    // Fan-in wakes the parent once, not once per child: one suspension on all twenty.
    const steps = (await t.app.tasks.journals.steps(ALICE, task.id))!;
    expect(steps.filter((s) => s.childId !== null)).toHaveLength(20);
  });

  it('rejects child.result() with a ChildTaskError the handler may catch and go on', async () => {
    const { task } = await t.app.tasks.start(ALICE, { kind: 'catcher', input: {} });
    const done = await finished(task.id);
    const [child] = await childrenOf(task.id);
    expect(done).toMatchObject({
      status: 'completed',
      result: {
        caught: {
          code: 'CHILD_FAILED',
          childId: child!.id,
          status: 'failed',
          error: { code: 'HANDLER_ERROR', message: 'no luck' },
        },
      },
    });
  });

  it('starts no child twice when the parent fails between starting children and waiting for them', async () => {
    const { task } = await t.app.tasks.start(ALICE, { kind: 'crashy', input: {} });
    const done = await finished(task.id);
    expect(done).toMatchObject({ status: 'completed', attempt: 2 });
    expect(done.result).toHaveLength(3);
    expect(await childrenOf(task.id)).toHaveLength(3);
  });

  it('cancelling a waiting parent cancels its children at once', async () => {
    const { task } = await t.app.tasks.start(ALICE, {
      kind: 'pipeline',
      input: { stages: 1, children: 3, childMs: 60_000 },
    });
    await eventually(async () => {
      const row = await t.app.db.kysely
        .selectFrom('tasks')
        .select(['hold', 'children_waiting'])
        .where('id', '=', task.id)
        .executeTakeFirst();
      return row?.hold === 'wait' && row.children_waiting === 3 ? row : undefined;
    });
    const cancelled = await t.app.tasks.cancel(ALICE, task.id);
    expect(cancelled.status).toBe('cancelled');
    const children = await childrenOf(task.id);
    expect(children.map((c) => c.status)).toEqual(['cancelled', 'cancelled', 'cancelled']);
  });
});
