import { afterAll, beforeAll, expect, it } from 'vitest';
import { defineTaskKind } from '../../../src/tasks/kinds.js';
import { eventually, startTestApp, type TestApp } from '../../helpers/app.js';

/**
 * What `ctx.step` returns is the journalled value, on the run that journals it as on every
 * later one: JSON as Postgres keeps it (a Date as its text, `undefined` members gone, an
 * object's keys in jsonb's order), so a handler that compares or hashes a step's value sees
 * the same thing before and after a crash or a wake-up.
 */

const ALICE = { id: 'alice', admin: false };
/** The step's value as each run of the handler saw it, in order. */
const seen: string[] = [];

const napper = defineTaskKind<Record<string, never>, null>({
  name: 'step-values',
  description: 'a step, then a nap that suspends the run, so the step is replayed',
  inputSchema: { type: 'object' },
  async run(ctx) {
    const value = await ctx.step('made', async () => ({
      zeta: 1,
      at: new Date(0),
      gone: undefined,
      a: [2, { y: 1, x: 2 }],
    }));
    seen.push(JSON.stringify(value));
    await ctx.sleep('nap', 300);
    return null;
  },
});

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ kinds: [napper] });
});
afterAll(() => t?.stop());

it('returns the journalled value on the first run as on the replay', {
  timeout: 60_000,
}, async () => {
  const { task } = await t.app.tasks.start(ALICE, { kind: 'step-values', input: {} });
  const done = await eventually(async () => {
    const now = await t.app.tasks.get(ALICE, task.id);
    return now && now.status !== 'working' ? now : undefined;
  });
  expect(done.status).toBe('completed');
  // jsonb orders keys by length, then bytewise: the handler's own order is not kept.
  const journalled = '{"a":[2,{"x":2,"y":1}],"at":"1970-01-01T00:00:00.000Z","zeta":1}';
  expect(seen).toEqual([journalled, journalled]);
});
