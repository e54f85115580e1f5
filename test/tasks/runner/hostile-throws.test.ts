import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineTaskKind } from '../../../src/tasks/kinds.js';
import { collect, startTestApp, type TestApp } from '../../helpers/app.js';

/**
 * A handler may throw anything, not only Errors. Whatever it throws, the task ends FAILED with
 * HANDLER_ERROR, nothing is left unhandled, and the server goes on serving.
 */

const THROWS: Record<string, () => unknown> = {
  cyclic: () => {
    const value: Record<string, unknown> = { name: 'loop' };
    value.self = value;
    return value;
  },
  bigint: () => 10n,
  null: () => null,
  'throwing-tostring': () => ({
    toString() {
      throw new Error('toString refuses');
    },
  }),
  'throwing-getter': () => ({
    get message() {
      throw new Error('getter refuses');
    },
  }),
};

const thrower = defineTaskKind<{ what: string }, never>({
  name: 'thrower',
  description: 'test: throws the hostile value its input names',
  inputSchema: {
    type: 'object',
    properties: { what: { enum: Object.keys(THROWS) } },
    required: ['what'],
  },
  // Each of the three attempts throws it, some 10 and 20 ms apart rather than 1 and 2 s.
  retry: { initialDelayMs: 10 },
  async run({ input }) {
    throw THROWS[input.what]?.();
  },
});

const fine = defineTaskKind<Record<string, never>, { ok: true }>({
  name: 'fine',
  description: 'test: completes at once',
  inputSchema: { type: 'object' },
  async run() {
    return { ok: true };
  },
});

/** Returns a result whose `toJSON` throws a value that is not an Error. */
const unstorable = defineTaskKind<Record<string, never>, unknown>({
  name: 'unstorable',
  description: 'test: returns a result JSON cannot express',
  inputSchema: { type: 'object' },
  async run() {
    return {
      toJSON() {
        throw 10n;
      },
    };
  },
});

const START = `mutation($input: StartTaskInput!) { startTask(input: $input) { id status } }`;
const FOLLOW = `subscription($id: ID!) { taskUpdated(id: $id) { status error { code message } } }`;

let t: TestApp;
const unhandled: unknown[] = [];
const onUnhandled = (reason: unknown) => unhandled.push(reason);

beforeAll(async () => {
  process.on('unhandledRejection', onUnhandled);
  t = await startTestApp({ kinds: [thrower, fine, unstorable] });
});
afterAll(async () => {
  process.off('unhandledRejection', onUnhandled);
  await t?.stop();
});

async function run(token: string, kind: string, input: Record<string, unknown>) {
  const started = await t.gql(START, { input: { kind, input } }, token);
  expect(started.errors).toBeUndefined();
  const { events, error } = await collect(t.ws(token), FOLLOW, { id: started.data.startTask.id });
  expect(error).toBeUndefined();
  return events.at(-1)?.taskUpdated;
}

describe('a handler that throws a value that is not an Error', () => {
  it.each(Object.keys(THROWS))('%s: the task fails with HANDLER_ERROR', async (what) => {
    const token = await t.token('alice');
    const last = await run(token, 'thrower', { what });
    expect(last.status).toBe('FAILED');
    expect(last.error.code).toBe('HANDLER_ERROR');
    expect(typeof last.error.message).toBe('string');
    expect(unhandled).toEqual([]);
  });

  it('a result whose serialization throws one: the task fails with HANDLER_ERROR', async () => {
    const token = await t.token('alice');
    const last = await run(token, 'unstorable', {});
    expect(last.status).toBe('FAILED');
    expect(last.error.code).toBe('HANDLER_ERROR');
    expect(unhandled).toEqual([]);
  });

  it('leaves the server serving', async () => {
    const token = await t.token('alice');
    const last = await run(token, 'fine', {});
    expect(last.status).toBe('COMPLETED');
    expect(unhandled).toEqual([]);
  });
});
