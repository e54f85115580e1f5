import { describe, expect, it } from 'vitest';
import { alice, bob, t, useFileApp } from '../../helpers/file-app.js';
import { hold } from '../../helpers/kinds.js';

/** DESIGN §17 debounce through GraphQL: `StartTaskInput.debounce` on startTask and startTasks. */

useFileApp({ kinds: [hold] });

const START = `mutation($input: StartTaskInput!) {
  startTask(input: $input) { id version input labels runAt lastUpdatedAt status }
}`;
const START_MANY = `mutation($inputs: [StartTaskInput!]!) { startTasks(inputs: $inputs) { id input } }`;
const MINUTE = 60_000;

const start = (input: Record<string, unknown>, token = alice) =>
  t.gql(START, { input: { kind: 'hold', ...input } }, token);

describe('StartTaskInput.debounce', () => {
  it('answers every start of a burst with the same task, carrying the last input and labels', async () => {
    const debounce = { key: 'gql-burst', delayMs: MINUTE, maxDelayMs: 5 * MINUTE };
    const first = await start({ input: { v: 1 }, labels: { step: 'one' }, debounce });
    const second = await start({ input: { v: 2 }, labels: { step: 'two' }, debounce });
    expect(first.errors).toBeUndefined();
    expect(second.errors).toBeUndefined();
    expect(second.data.startTask).toMatchObject({
      id: first.data.startTask.id,
      version: 2,
      input: { v: 2 },
      labels: { step: 'two' },
      status: 'WORKING',
    });
    const { runAt, lastUpdatedAt } = second.data.startTask;
    expect(Date.parse(runAt)).toBe(Date.parse(lastUpdatedAt) + MINUTE);
    // Another principal's start with the same key is its own burst.
    const theirs = await start({ input: { v: 3 }, debounce }, bob);
    expect(theirs.data.startTask.id).not.toBe(first.data.startTask.id);
  });

  it('joins a burst across the entries of startTasks, each answered with its task', async () => {
    const debounce = { key: 'gql-many', delayMs: MINUTE };
    const res = await t.gql(
      START_MANY,
      {
        inputs: [
          { kind: 'hold', input: { v: 1 }, debounce },
          { kind: 'hold', input: { v: 2 }, debounce },
        ],
      },
      alice,
    );
    expect(res.errors).toBeUndefined();
    const [one, two] = res.data.startTasks;
    expect(two.id).toBe(one.id);
    const read = await t.gql(
      `query($id: ID!) { task(id: $id) { input version } }`,
      { id: one.id },
      alice,
    );
    expect(read.data.task).toEqual({ input: { v: 2 }, version: 2 });
  });

  it.each([
    ['a key too long', { key: 'k'.repeat(129), delayMs: 0 }, {}, /debounce\.key/],
    ['a negative delay', { key: 'k', delayMs: -1 }, {}, /debounce\.delayMs/],
    ['a cap under the delay', { key: 'k', delayMs: 10, maxDelayMs: 5 }, {}, /debounce\.maxDelayMs/],
    [
      'an idempotency key beside it',
      { key: 'k', delayMs: 0 },
      { idempotencyKey: 'i' },
      /^idempotencyKey/,
    ],
    ['runAt beside it', { key: 'k', delayMs: 0 }, { runAt: '2999-01-01T00:00:00Z' }, /^runAt/],
  ])('refuses %s as BAD_USER_INPUT naming the field', async (_what, debounce, extra, message) => {
    const res = await start({ input: {}, debounce, ...extra });
    expect(res.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
    expect(res.errors?.[0]?.message).toMatch(message);
  });

  it('refuses a debounce without delayMs before it runs, with a code', async () => {
    const res = await start({ input: {}, debounce: { key: 'k' } });
    expect(res.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
    expect(res.errors?.[0]?.message).toContain('delayMs');
  });

  it('names the refused entry of a batch', async () => {
    const res = await t.gql(
      START_MANY,
      {
        inputs: [
          { kind: 'hold', input: {}, debounce: { key: 'fine', delayMs: 0 } },
          { kind: 'hold', input: {}, debounce: { key: '', delayMs: 0 } },
        ],
      },
      alice,
    );
    expect(res.errors?.[0]?.extensions).toMatchObject({ code: 'BAD_USER_INPUT', index: 1 });
    expect(res.errors?.[0]?.message).toMatch(/^entry 1: debounce\.key/);
  });
});
