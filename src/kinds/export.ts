import { defineTaskKind } from '../tasks/kinds.js';
import { TASK_STATUSES, type TaskStatus } from '../tasks/status.js';

/** Rows one export holds at most; the result says `truncated` past it. The content is stored in the task row. */
export const EXPORT_MAX_ROWS = 10_000;
const PAGE = 500;

interface ExportInput {
  format: 'csv' | 'ndjson';
  status?: string[];
}

const COLUMNS = ['id', 'kind', 'status', 'createdAt', 'lastUpdatedAt', 'expiresAt'] as const;

function csvCell(value: string): string {
  return /[",\n\r]/.test(value) ? `"${value.replaceAll('"', '""')}"` : value;
}

/** Exports the owner's own tasks (metadata only, never payloads), newest first. */
export const exportTasks = defineTaskKind<
  ExportInput,
  { format: string; rows: number; content: string; truncated: boolean }
>({
  name: 'export',
  description: `Exports your own tasks (id, kind, status, timestamps) as CSV or NDJSON, newest first, at most ${EXPORT_MAX_ROWS} rows.`,
  inputSchema: {
    type: 'object',
    properties: {
      format: { enum: ['csv', 'ndjson'] },
      status: {
        type: 'array',
        items: { enum: [...TASK_STATUSES, ...TASK_STATUSES.map((s) => s.toUpperCase())] },
        uniqueItems: true,
      },
    },
    required: ['format'],
    additionalProperties: false,
  },
  async run({ input, taskId, listOwnTasks, signal, progress }) {
    const statuses = input.status?.map((s) => s.toLowerCase() as TaskStatus) ?? null;
    const lines: string[] = input.format === 'csv' ? [COLUMNS.join(',')] : [];
    let after: string | null = null;
    let rows = 0;
    let truncated = false;
    for (;;) {
      signal.throwIfAborted();
      const page = await listOwnTasks({ statuses, first: PAGE, after });
      for (const task of page.tasks) {
        if (task.id === taskId) continue; // the export does not list itself
        if (rows === EXPORT_MAX_ROWS) {
          truncated = true;
          break;
        }
        const record = {
          id: task.id,
          kind: task.kind,
          status: task.status,
          createdAt: task.createdAt.toISOString(),
          lastUpdatedAt: task.lastUpdatedAt.toISOString(),
          expiresAt: task.expiresAt.toISOString(),
        };
        lines.push(
          input.format === 'csv'
            ? COLUMNS.map((c) => csvCell(record[c])).join(',')
            : JSON.stringify(record),
        );
        rows++;
      }
      if (truncated || !page.hasNextPage || !page.endCursor) break;
      after = page.endCursor;
      progress(Math.min(0.99, rows / EXPORT_MAX_ROWS), `${rows} rows`);
    }
    const content = lines.length ? `${lines.join('\n')}\n` : '';
    return { format: input.format, rows, content, truncated };
  },
});
