/**
 * The A2A conformance kit's agent as a task kind: the kit (`a2aproject/a2a-tck`, its
 * `scenarios/*.feature`) says what the agent under test does with a message by the prefix of
 * the message's id. Served as the default skill (`A2A_DEFAULT_SKILL=tck`), it gets every
 * message the kit sends, as `{ text, data, messageId }`, and shows its results over A2A in the
 * parts it names (`a2a/parts`, docs/a2a.md).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { defineTaskKind, TaskFailedError } from '../../src/index.js';

/** What the default skill reads from a message (docs/a2a.md). */
export interface TckMessage {
  text: string;
  data: unknown;
  messageId: string;
}

const message = {
  type: 'object',
  properties: { text: { type: 'string' }, data: {}, messageId: { type: 'string' } },
  required: ['text', 'data', 'messageId'],
} as const;

type Parts = Array<Record<string, unknown>>;
const text = (value: string): Parts => [{ text: value }];
/** A file part with its bytes inline, in base64 as A2A's JSON carries bytes. */
const file = (): Parts => [
  { raw: Buffer.from('tck').toString('base64'), filename: 'output.txt', mediaType: 'text/plain' },
];

interface Scenario {
  prefix: string;
  /** Reports work before the result, so a stream shows a working update first. */
  works?: boolean;
  /** How long it works: the kit's long-running task, to subscribe to while it runs. */
  workMs?: number;
  parts?: Parts;
  /** The result is the agent's direct answer: a Message to a waiting SendMessage. */
  reply?: boolean;
  /** The task fails with this message. */
  fails?: string;
}

/** Longest prefixes first: `tck-artifact-file-url` before `tck-artifact-file`. */
export const SCENARIOS: readonly Scenario[] = [
  { prefix: 'tck-stream-artifact-chunked', works: true, parts: text('chunk-1 chunk-2') },
  { prefix: 'tck-stream-artifact-text', works: true, parts: text('Streamed text content') },
  { prefix: 'tck-stream-artifact-file', works: true, parts: file() },
  { prefix: 'tck-stream-ordering-001', works: true, parts: text('Ordered output') },
  { prefix: 'tck-stream-001', works: true, parts: text('Stream hello from TCK') },
  { prefix: 'tck-stream-002' },
  { prefix: 'tck-stream-003', works: true, parts: text('Stream task lifecycle') },
  { prefix: 'test-resubscribe-message-id', works: true, workMs: 4_000 },
  {
    prefix: 'tck-artifact-file-url',
    parts: [
      { url: 'https://example.com/output.txt', filename: 'output.txt', mediaType: 'text/plain' },
    ],
  },
  { prefix: 'tck-artifact-file', parts: file() },
  { prefix: 'tck-artifact-text', parts: text('Generated text content') },
  { prefix: 'tck-artifact-data', parts: [{ data: { key: 'value', count: 42 } }] },
  { prefix: 'tck-message-response', parts: text('Direct message response'), reply: true },
  { prefix: 'tck-complete-task', parts: text('Hello from TCK') },
  { prefix: 'tck-reject-task', fails: 'rejected' },
];

/** A message whose id has this prefix leaves the task waiting for the next message. */
export const INPUT_REQUIRED = 'tck-input-required';

/** The kit's agent: scenarios by message-id prefix, anything else completes with an echo. */
export const tckKind = defineTaskKind<TckMessage, Record<string, unknown>>({
  name: 'tck',
  description:
    "The A2A conformance kit's agent: what it does with a message depends on the prefix of the message's id.",
  inputSchema: message,
  pollIntervalMs: 200,
  retry: { maxAttempts: 1 },
  async run({ input, progress, requestInput, signal }) {
    let current = input;
    // Each message that asks for more is a question; the next message answers it.
    for (let turn = 1; current.messageId.startsWith(INPUT_REQUIRED); turn++) {
      current = await requestInput<TckMessage>({
        key: `turn-${turn}`,
        message: 'Send the next message of the conversation.',
        schema: message,
      });
    }
    const scenario = SCENARIOS.find(({ prefix }) => current.messageId.startsWith(prefix));
    if (!scenario) return { 'a2a/parts': text(`Echo: ${current.text}`) };
    if (scenario.fails) throw new TaskFailedError('REJECTED', scenario.fails);
    if (scenario.works) progress(0.5, 'Working.');
    if (scenario.workMs) await sleep(scenario.workMs, undefined, { signal });
    return {
      'a2a/parts': scenario.parts ?? text('Done.'),
      ...(scenario.reply ? { 'a2a/reply': 'message' } : {}),
    };
  },
});
