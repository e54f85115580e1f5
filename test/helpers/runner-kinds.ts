import { afterAll, beforeAll } from 'vitest';
import { defineTaskKind, TaskFailedError } from '../../src/tasks/kinds.js';
import { startTestApp, type TestApp } from './app.js';
import { untilAborted } from './kinds.js';

/**
 * The runner suites' kinds and their shared app: `useRunnerApp()` in a test file starts one app
 * with every kind below (all 50 racers run at once; heartbeats every 500 ms); `t` then holds it
 * (ES modules export it live).
 */

/** Handlers of the kind `racer` wait here until the test releases them. */
export interface Gate {
  reached: Promise<void>;
  arrive(): void;
  released: Promise<void>;
  release(): void;
}
export const gates = new Map<string, Gate>();
export function gate(id: string): Gate {
  let entry = gates.get(id);
  if (!entry) {
    let arrive!: () => void;
    let release!: () => void;
    const reached = new Promise<void>((r) => (arrive = r));
    const released = new Promise<void>((r) => (release = r));
    entry = { reached, arrive, released, release };
    gates.set(id, entry);
  }
  return entry;
}

/** Completes when released, paying no attention to its signal: only the store can stop its result. */
export const racer = defineTaskKind<Record<string, never>, { finished: true }>({
  name: 'racer',
  description: 'test: completes when the test releases it',
  inputSchema: { type: 'object' },
  async run({ taskId }) {
    const g = gate(taskId);
    g.arrive();
    await g.released;
    return { finished: true };
  },
});

/** Returns its input's `text` when released: a result the store may refuse (a NUL character). */
export const echo = defineTaskKind<{ text: string; nul?: boolean }, { text: string }>({
  name: 'echo',
  description:
    'test: returns its text (with a NUL character after it, if asked) when the test releases it',
  inputSchema: {
    type: 'object',
    properties: { text: { type: 'string' }, nul: { type: 'boolean' } },
    required: ['text'],
  },
  async run({ taskId, input }) {
    const g = gate(taskId);
    g.arrive();
    await g.released;
    return { text: input.nul ? `${input.text}\u0000` : input.text };
  },
});

/** Returns what JSON cannot say. */
export const bigint = defineTaskKind<Record<string, never>, { n: bigint }>({
  name: 'bigint',
  description: 'test: returns a BigInt',
  inputSchema: { type: 'object' },
  run: async () => ({ n: 10n }),
});

export const abortReasons = new Map<string, unknown>();
export const waitForAbort = (taskId: string, signal: AbortSignal) =>
  untilAborted(signal, (reason) => abortReasons.set(taskId, reason));

/** Retried as by default, but some 10 and 20 ms apart rather than 1 and 2 s. */
const quickRetries = { initialDelayMs: 10 };

export const slow = defineTaskKind<Record<string, never>, never>({
  name: 'slow',
  description: 'test: runs until aborted; times out after 200 ms',
  inputSchema: { type: 'object' },
  timeoutMs: 200,
  retry: quickRetries,
  run: ({ taskId, signal }) => waitForAbort(taskId, signal),
});

export const hang = defineTaskKind<Record<string, never>, never>({
  name: 'hang',
  description: 'test: runs until aborted',
  inputSchema: { type: 'object' },
  run: ({ taskId, signal }) => waitForAbort(taskId, signal),
});

export const thrower = defineTaskKind<{ coded: boolean }, never>({
  name: 'thrower',
  description: 'test: throws',
  inputSchema: { type: 'object', properties: { coded: { type: 'boolean' } }, required: ['coded'] },
  retry: quickRetries,
  async run({ input }) {
    if (input.coded) throw new TaskFailedError('QUOTA_EXCEEDED', 'Over quota.');
    throw new Error('boom');
  },
});

/** Asks once, with a short poll interval and a timeout shorter than the wait for the answer. */
export const asker = defineTaskKind<Record<string, never>, { said: unknown }>({
  name: 'asker',
  description: 'test: asks for `word`',
  inputSchema: { type: 'object' },
  pollIntervalMs: 20,
  timeoutMs: 300,
  async run({ requestInput }) {
    const said = await requestInput({
      key: 'word',
      message: 'Say a word',
      schema: { type: 'string' },
    });
    return { said };
  },
});

/** Hangs on its first attempt; completes on any later one. */
export const secondTime = defineTaskKind<Record<string, never>, { attempt: number }>({
  name: 'second-time',
  description: 'test: completes on its second attempt',
  inputSchema: { type: 'object' },
  async run({ taskId, attempt, signal }) {
    if (attempt === 1) await waitForAbort(taskId, signal);
    return { attempt };
  },
});

export const kinds = [racer, echo, bigint, slow, hang, thrower, asker, secondTime];

export const codeOf = (response: { errors?: Array<{ extensions?: { code?: string } }> }) =>
  response.errors?.[0]?.extensions?.code;

export let t: TestApp;
export function useRunnerApp(): void {
  beforeAll(async () => {
    t = await startTestApp({ kinds, env: { RUNNER_CONCURRENCY: '64', TASK_LEASE_MS: '1500' } });
  });
  afterAll(() => t?.stop());
}
