import { ClientError, type ClientTask, type TaskhandleClient } from '../client/index.js';
import { TASK_FIELDS } from '../client/task.js';
import { CliError, explain } from './errors.js';

/** DESIGN §15 from a shell: `start --batch` and `retry`; and §17's `start --debounce`. */

/** Most entries one startTasks call takes; longer input is sent in several calls, in order. */
const BATCH = 100;

/** `--label key=value`, repeatable: the labels collected so far. */
export function collectLabel(pair: string, labels: Record<string, string> = {}) {
  const eq = pair.indexOf('=');
  if (eq < 1) throw new CliError(`--label ${JSON.stringify(pair)} must be key=value.`);
  return { ...labels, [pair.slice(0, eq)]: pair.slice(eq + 1) };
}

/**
 * `--debounce key:ms[:maxMs]` (DESIGN §17). The key may hold colons: the number or two after the
 * last ones are the delays (a key ending in `:<digits>` therefore needs maxMs). Ranges are the
 * server's to check.
 */
export function debounceOption(text: string): {
  key: string;
  delayMs: number;
  maxDelayMs?: number;
} {
  const parts = text.split(':');
  const whole = (part: string | undefined) => part !== undefined && /^\d+$/.test(part);
  const last = parts.at(-1);
  const before = parts.at(-2);
  if (parts.length >= 3 && whole(last) && whole(before))
    return {
      key: parts.slice(0, -2).join(':'),
      delayMs: Number(before),
      maxDelayMs: Number(last),
    };
  if (parts.length >= 2 && whole(last))
    return { key: parts.slice(0, -1).join(':'), delayMs: Number(last) };
  throw new CliError(
    `--debounce ${JSON.stringify(text)} must be key:ms or key:ms:maxMs (e.g. reindex:5000:60000).`,
  );
}

/** Reads NDJSON start inputs (one StartTaskInput object a line; blank lines skipped). */
export async function readStartLines(stream: NodeJS.ReadableStream): Promise<unknown[]> {
  let text = '';
  for await (const chunk of stream) text += chunk.toString();
  const entries: unknown[] = [];
  for (const [i, line] of text.split('\n').entries()) {
    if (line.trim() === '') continue;
    try {
      entries.push(JSON.parse(line));
    } catch (err) {
      throw new CliError(`line ${i + 1} of standard input is not JSON: ${(err as Error).message}`);
    }
  }
  if (entries.length === 0) throw new CliError('standard input holds no task to start.');
  return entries;
}

/**
 * Starts every entry, BATCH at a time (each call all or nothing), calling `each` with every
 * task started, in input order.
 */
export async function startBatch(
  client: TaskhandleClient,
  entries: readonly unknown[],
  each: (task: ClientTask) => void,
): Promise<void> {
  for (let from = 0; from < entries.length; from += BATCH) {
    const inputs = entries.slice(from, from + BATCH);
    try {
      const { startTasks } = await client.request<{ startTasks: ClientTask[] }>(
        `mutation($inputs: [StartTaskInput!]!) { startTasks(inputs: $inputs) { ${TASK_FIELDS} } }`,
        { inputs },
      );
      for (const task of startTasks) each(task);
    } catch (err) {
      if (err instanceof ClientError && from > 0) {
        const failure = explain(err);
        throw new CliError(`${failure.message} (lines before entry ${from} were started)`);
      }
      throw err;
    }
  }
}

/** `retry ID [--from-step NAME]`: from a step, the journal before it is kept (DESIGN §16). */
export async function retryTask(
  client: TaskhandleClient,
  id: string,
  fromStep?: string,
): Promise<ClientTask> {
  const { retryTask } = await client.request<{ retryTask: ClientTask }>(
    `mutation($id: ID!, $fromStep: String) { retryTask(id: $id, fromStep: $fromStep) { ${TASK_FIELDS} } }`,
    { id, fromStep: fromStep ?? null },
  );
  return retryTask;
}
