import type { ClientInputRequest, ClientTask } from '../client/index.js';

/** How long ago (or until) `iso` is, compactly: 5s, 3m, 2h, 4d. */
export function span(iso: string, now = Date.now()): string {
  const seconds = Math.abs(Math.round((Date.parse(iso) - now) / 1000));
  if (seconds < 60) return `${seconds}s`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)}m`;
  if (seconds < 86_400) return `${Math.floor(seconds / 3600)}h`;
  return `${Math.floor(seconds / 86_400)}d`;
}

const percent = (task: ClientTask) =>
  task.progress == null ? '' : `${Math.round(task.progress * 100)}%`;

/**
 * Every question the task waits on, in the order it asked them. A server older than
 * `inputRequests` (or a task seen through a face that shows one question) gives the first only.
 */
export function questions(task: ClientTask): ClientInputRequest[] {
  if (task.inputRequests?.length) return task.inputRequests;
  return task.inputRequest ? [task.inputRequest] : [];
}

/** One task as a few readable lines. */
/** What holds a task back, as `held: by its …` says it. */
const HELD_BY = {
  CONCURRENCY: 'concurrency key (at its limit)',
  RATE_LIMIT: 'rate limit key (its limit started in the period)',
  TIME: 'time (runAt)',
} as const;

export function describeTask(task: ClientTask): string {
  const lines = [
    `${task.id}  ${task.kind}  ${task.status} ${percent(task)}`.trimEnd(),
    ...(task.statusMessage ? [`  message:  ${task.statusMessage}`] : []),
    `  created:  ${span(task.createdAt)} ago; expires in ${span(task.expiresAt)}`,
  ];
  if (task.parentId) lines.push(`  parent:   ${task.parentId}`);
  if (task.attempt !== undefined && task.maxAttempts !== undefined && task.attempt > 0)
    lines.push(`  attempt:  ${task.attempt} of ${task.maxAttempts}`);
  if (task.runAt)
    lines.push(
      task.attempt
        ? `  next:     attempt ${task.attempt + 1} in ${span(task.runAt)}`
        : `  waiting:  until ${task.runAt} (in ${span(task.runAt)})`,
    );
  if (task.heldBecause) lines.push(`  held:     by its ${HELD_BY[task.heldBecause]}`);
  if (task.lastError && task.status !== 'FAILED')
    lines.push(`  last error: ${task.lastError.code} ${task.lastError.message}`);
  for (const request of questions(task)) {
    lines.push(`  asks:     ${request.message}`);
    lines.push(`  answer:   taskhandle answer ${task.id} ${request.key} JSON`);
  }
  if (task.result !== null && task.result !== undefined)
    lines.push(`  result:   ${JSON.stringify(task.result)}`);
  if (task.error) lines.push(`  error:    ${task.error.code} ${task.error.message}`);
  return lines.join('\n');
}

/** Tasks as aligned columns. */
export function table(tasks: readonly ClientTask[]): string {
  const rows = [
    ['ID', 'KIND', 'STATUS', 'PROGRESS', 'AGE', 'MESSAGE'],
    ...tasks.map((t) => [
      t.id,
      t.kind,
      t.status,
      percent(t),
      span(t.createdAt),
      t.statusMessage ?? '',
    ]),
  ];
  return columns(rows);
}

/** Rows of cells as aligned columns, two spaces apart. */
export function columns(rows: readonly string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows
    .map((r) =>
      r
        .map((cell, i) => cell.padEnd(widths[i]!))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}
