/**
 * The MCP conformance suite's fixture server: taskhandle as any user's server would build it
 * (`createApp` and `defineTaskKind` from the package), with the kinds the suite's scenarios
 * name and nothing else. Configured from the environment like `npm start`:
 *
 *   node --import tsx test/mcp-conformance/server.ts
 *
 * It prints the base URL on its first line of stdout once it listens.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { createApp, defineTaskKind, loadConfig, TaskFailedError } from '../../src/index.js';

const text = (schema: Record<string, unknown> = {}) => ({ type: 'string', ...schema });

/** Sync only: answers within the request. */
const greet = defineTaskKind<{ name: string }, string>({
  name: 'greet',
  description: 'Greets `name`.',
  inputSchema: { type: 'object', properties: { name: text() }, required: ['name'] },
  taskSupport: 'forbidden',
  run: async ({ input }) => `Hello, ${input.name}!`,
});

/** Sleeps `seconds`, stopping at once when cancelled. */
const slowCompute = defineTaskKind<{ seconds: number; label?: string }, string>({
  name: 'slow_compute',
  description: 'Sleeps `seconds`, then answers with its `label`.',
  inputSchema: {
    type: 'object',
    properties: { seconds: { type: 'number', minimum: 0, maximum: 600 }, label: text() },
    required: ['seconds'],
  },
  pollIntervalMs: 200,
  async run({ input, signal }) {
    await sleep(input.seconds * 1000, undefined, { signal });
    return `Computed ${input.label ?? 'result'} after ${input.seconds}s.`;
  },
});

/** The tool itself reports a failure: `completed` with `isError` on the extension's wire. */
const failingJob = defineTaskKind<Record<string, never>, never>({
  name: 'failing_job',
  description: 'Fails on purpose after a moment, as a tool error.',
  inputSchema: { type: 'object' },
  taskSupport: 'required',
  pollIntervalMs: 200,
  async run({ signal }) {
    await sleep(300, undefined, { signal });
    throw new TaskFailedError('JOB_FAILED', 'The job failed on purpose.');
  },
});

/** A failure outside the tool's own answer: `failed` with a JSON-RPC error. */
const protocolErrorJob = defineTaskKind<Record<string, never>, never>({
  name: 'protocol_error_job',
  description: 'Fails as the server would fail around a tool, not as a tool error.',
  inputSchema: { type: 'object' },
  pollIntervalMs: 200,
  async run() {
    throw new TaskFailedError('INTERNAL_SERVER_ERROR', 'The server failed around the tool.');
  },
});

const confirm = {
  type: 'object',
  properties: { confirm: { type: 'boolean' } },
  required: ['confirm'],
};

/** Asks one question, then answers. */
const confirmDelete = defineTaskKind<{ filename: string }, string>({
  name: 'confirm_delete',
  description: 'Asks to confirm deleting `filename`.',
  inputSchema: { type: 'object', properties: { filename: text() }, required: ['filename'] },
  pollIntervalMs: 200,
  async run({ input, requestInput }) {
    const answer = await requestInput<{ confirm: boolean }>({
      key: 'confirm',
      message: `Delete ${input.filename}?`,
      schema: confirm,
    });
    return answer.confirm ? `Deleted ${input.filename}.` : `Kept ${input.filename}.`;
  },
});

/** Asks two questions at once: the task waits with both outstanding until each is answered. */
const multiInput = defineTaskKind<Record<string, never>, string>({
  name: 'multi_input',
  description: 'Asks for a name and a confirmation.',
  inputSchema: { type: 'object' },
  pollIntervalMs: 200,
  async run({ requestInputs }) {
    const form = { type: 'object', properties: { name: text(), confirm: { type: 'boolean' } } };
    const { first, second } = await requestInputs<{
      first: { name?: string };
      second: { name?: string };
    }>([
      { key: 'first', message: 'First name?', schema: form },
      { key: 'second', message: 'Second name?', schema: form },
    ]);
    return `Got ${first.name ?? '?'} and ${second.name ?? '?'}.`;
  },
});

/** Needs a client that can follow a task; a call without `name` is asked for it first. */
const toolWithTask = defineTaskKind<{ name: string }, string>({
  name: 'test_tool_with_task',
  description: 'Greets `name` as a task.',
  inputSchema: { type: 'object', properties: { name: text() }, required: ['name'] },
  taskSupport: 'required',
  pollIntervalMs: 200,
  run: async ({ input }) => `Hello, ${input.name}!`,
});

/** The stateless scenario's probes: plain quick tools. */
const probes = ['test_streaming_elicitation', 'test_logging_tool'].map((name) =>
  defineTaskKind<Record<string, never>, string>({
    name,
    description: 'Answers at once.',
    inputSchema: { type: 'object' },
    taskSupport: 'forbidden',
    run: async () => 'done',
  }),
);

const app = await createApp({
  config: loadConfig(),
  replaceBuiltInKinds: true,
  kinds: [
    greet,
    slowCompute,
    failingJob,
    protocolErrorJob,
    confirmDelete,
    multiInput,
    toolWithTask,
    ...probes,
  ],
});
console.log(await app.listen());
const stop = () => void app.stop().then(() => process.exit(0));
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
