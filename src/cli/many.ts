import { CliError, type CliTask, request, TASK_FIELDS, type Target } from './client.js';

/** DESIGN §15 from a shell: `start --batch` and `retry`. */

/** Most entries one startTasks call takes; longer input is sent in several calls, in order. */
const BATCH = 100;

/** `--label key=value`, repeatable: the labels collected so far. */
export function collectLabel(pair: string, labels: Record<string, string> = {}) {
  const eq = pair.indexOf('=');
  if (eq < 1) throw new CliError(`--label ${JSON.stringify(pair)} must be key=value.`);
  return { ...labels, [pair.slice(0, eq)]: pair.slice(eq + 1) };
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
  target: Target,
  entries: readonly unknown[],
  each: (task: CliTask) => void,
): Promise<void> {
  for (let from = 0; from < entries.length; from += BATCH) {
    const inputs = entries.slice(from, from + BATCH);
    try {
      const { startTasks } = await request<{ startTasks: CliTask[] }>(
        target,
        `mutation($inputs: [StartTaskInput!]!) { startTasks(inputs: $inputs) { ${TASK_FIELDS} } }`,
        { inputs },
      );
      for (const task of startTasks) each(task);
    } catch (err) {
      if (err instanceof CliError && from > 0)
        throw new CliError(`${err.message} (lines before entry ${from} were started)`);
      throw err;
    }
  }
}

export async function retryTask(target: Target, id: string): Promise<CliTask> {
  const { retryTask } = await request<{ retryTask: CliTask }>(
    target,
    `mutation($id: ID!) { retryTask(id: $id) { ${TASK_FIELDS} } }`,
    { id },
  );
  return retryTask;
}
