import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineTaskKind } from '../../src/tasks/kinds.js';
import type { StartRequest } from '../../src/tasks/requests.js';
import type { Task } from '../../src/tasks/task.js';
import { eventually, startTestApp, type TestApp } from '../helpers/app.js';
import { hold } from '../helpers/kinds.js';

/**
 * DESIGN §17 debounce at its edges: starts of one burst racing the runner's claim, and the
 * refusals of a debounce that cannot be (debounce.test.ts has the burst itself).
 */

const alice = { id: 'alice', admin: false };
const MINUTE = 60_000;

/** What each run of a `tally` task saw: the burst's input as the claim handed it over. */
const runs = new Map<string, unknown[]>();
const tally = defineTaskKind({
  name: 'tally',
  description: 'notes the input of each run',
  inputSchema: { type: 'object' },
  run: async ({ taskId, input }) => {
    runs.set(taskId, [...(runs.get(taskId) ?? []), input]);
    return null;
  },
});

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ kinds: [hold, tally] });
});
afterAll(() => t?.stop());

const start = (request: StartRequest, actor = alice) =>
  t.app.tasks.start(actor, request).then(({ task }) => task);

describe('a burst racing the claim', () => {
  it('either joins the task before its claim or begins a new one: no run misses an input it answered', async () => {
    const answers: Task[] = [];
    // Due at once, so the runner claims while the starts go on arriving.
    for (let wave = 0; wave < 8; wave++)
      answers.push(
        ...(await Promise.all(
          Array.from({ length: 6 }, (_, i) =>
            start({
              kind: 'tally',
              input: { n: wave * 6 + i },
              debounce: { key: 'claim-race', delayMs: 0 },
            }),
          ),
        )),
      );
    const ids = [...new Set(answers.map((task) => task.id))];
    for (const id of ids)
      await eventually(
        async () => (await t.app.tasks.get(alice, id))?.status === 'completed' || undefined,
      );
    for (const id of ids) {
      // The run saw the input of the last start the task answered (the highest version).
      const mine = answers.filter((task) => task.id === id);
      const last = mine.reduce((a, b) => (b.version > a.version ? b : a));
      expect(runs.get(id)).toEqual([last.input]);
    }
    const open = await t.app.db.kysely
      .selectFrom('tasks')
      .select('id')
      .where('debounce_key', '=', 'claim-race')
      .execute();
    expect(open).toHaveLength(0);
  });
});

describe('refusals', () => {
  const refused = (debounce: unknown, extra: Partial<StartRequest> = {}) =>
    t.app.tasks.start(alice, { kind: 'hold', input: {}, debounce: debounce as never, ...extra });

  it.each([
    ['a key of 0 characters', { key: '', delayMs: 0 }, /debounce\.key/],
    ['a key of 129 characters', { key: 'k'.repeat(129), delayMs: 0 }, /debounce\.key/],
    ['a key with a control character', { key: 'a\nb', delayMs: 0 }, /debounce\.key/],
    ['a key that is not a string', { key: 7, delayMs: 0 }, /debounce\.key/],
    ['a negative delayMs', { key: 'k', delayMs: -1 }, /debounce\.delayMs.*0 to 86400000/],
    ['a fractional delayMs', { key: 'k', delayMs: 1.5 }, /debounce\.delayMs/],
    ['a delayMs over a day', { key: 'k', delayMs: 86_400_001 }, /debounce\.delayMs/],
    ['no delayMs', { key: 'k' }, /debounce\.delayMs/],
    [
      'a maxDelayMs under delayMs',
      { key: 'k', delayMs: 1_000, maxDelayMs: 999 },
      /debounce\.maxDelayMs.*debounce\.delayMs \(1000\)/,
    ],
    [
      'a maxDelayMs over a day',
      { key: 'k', delayMs: 0, maxDelayMs: 86_400_001 },
      /debounce\.maxDelayMs/,
    ],
    ['a debounce that is not an object', 'k', /debounce must be an object/],
  ])('refuses %s as BAD_USER_INPUT naming the field', async (_what, debounce, message) => {
    await expect(refused(debounce)).rejects.toMatchObject({ code: 'BAD_USER_INPUT', message });
  });

  it.each([
    ['idempotencyKey', { idempotencyKey: 'once' }],
    ['runAt', { runAt: new Date(Date.now() + MINUTE) }],
    ['delayMs', { delayMs: 5 }],
  ])('refuses debounce with %s, naming it', async (field, extra) => {
    await expect(refused({ key: 'k', delayMs: 0 }, extra)).rejects.toMatchObject({
      code: 'BAD_USER_INPUT',
      message: new RegExp(`^${field} cannot be combined with debounce`),
    });
  });

  it("refuses a delayMs past the task's retention", async () => {
    await expect(refused({ key: 'k', delayMs: 2_000 }, { ttlMs: 1_000 })).rejects.toMatchObject({
      code: 'BAD_USER_INPUT',
      message: /debounce\.delayMs \(2000\) must not exceed the task's ttlMs \(1000\)/,
    });
  });

  it('stores nothing for a refused start', async () => {
    await refused({ key: 'refused', delayMs: -1 }).catch(() => undefined);
    const rows = await t.app.db.kysely
      .selectFrom('tasks')
      .select('id')
      .where('debounce_key', '=', 'refused')
      .execute();
    expect(rows).toHaveLength(0);
  });
});
