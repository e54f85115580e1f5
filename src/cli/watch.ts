import cliProgress from 'cli-progress';
import { ClientError, type ClientTask, type TaskhandleClient } from '../client/index.js';
import { questions } from './format.js';

/** Exit codes of `watch` and `--follow`, from the task's final status. */
export const EXIT = { COMPLETED: 0, FAILED: 1, CANCELLED: 130 } as const;

export interface WatchOptions {
  /** A live bar (a terminal) instead of one JSON line per change. */
  bar: boolean;
}

/** Follows a task to its end, showing each change; resolves with the exit code. */
export async function watchTask(
  client: TaskhandleClient,
  id: string,
  options: WatchOptions,
): Promise<number> {
  const view = options.bar ? barView(id) : jsonLines();
  let last: ClientTask | undefined;
  try {
    for await (const task of client.handle(id).updates()) {
      last = task;
      view.show(task);
    }
  } catch (err) {
    // A task seen, then gone before its end: it expired.
    if (!(last && err instanceof ClientError && err.code === 'NOT_FOUND')) throw err;
  } finally {
    view.stop();
  }
  const status = last?.status;
  if (status === 'COMPLETED' || status === 'FAILED' || status === 'CANCELLED') {
    if (options.bar) view.summary?.(last as ClientTask);
    return EXIT[status];
  }
  process.stderr.write('taskhandle: the task expired before it ended.\n');
  return 1;
}

interface View {
  show(task: ClientTask): void;
  stop(): void;
  summary?(task: ClientTask): void;
}

function jsonLines(): View {
  return { show: (task) => process.stdout.write(`${JSON.stringify(task)}\n`), stop: () => {} };
}

const STATUS_LABEL: Record<ClientTask['status'], string> = {
  WORKING: 'working',
  INPUT_REQUIRED: 'waiting for input',
  COMPLETED: 'completed',
  CANCELLED: 'cancelled',
  FAILED: 'failed',
};

function barView(id: string): View {
  const bars = new cliProgress.MultiBar(
    {
      format: ' {bar} {percentage}% | {status} | {message}',
      barCompleteChar: '█',
      barIncompleteChar: '░',
      hideCursor: true,
      clearOnComplete: false,
      stopOnComplete: false,
      // `script` and some terminals report no width: keep the bar readable anyway.
      barsize: 30,
      fps: 20,
    },
    cliProgress.Presets.shades_classic,
  );
  const bar = bars.create(100, 0, { status: 'working', message: '' });
  /** Questions already printed, by key: each is shown once, when it is first asked. */
  const asked = new Set<string>();
  return {
    show(task) {
      const value = task.status === 'COMPLETED' ? 100 : Math.round((task.progress ?? 0) * 100);
      bar.update(value, {
        status: STATUS_LABEL[task.status],
        message: task.statusMessage ?? task.inputRequest?.message ?? '',
      });
      if (task.status !== 'INPUT_REQUIRED') asked.clear();
      for (const request of task.status === 'INPUT_REQUIRED' ? questions(task) : []) {
        if (asked.has(request.key)) continue;
        asked.add(request.key);
        bars.log(
          `Task ${id} asks: ${request.message}\n` +
            `  answer with: taskhandle answer ${id} ${request.key} '${example(request.schema)}'\n`,
        );
      }
    },
    stop: () => bars.stop(),
    summary(task) {
      if (task.status === 'COMPLETED')
        process.stdout.write(`completed: ${JSON.stringify(task.result)}\n`);
      else if (task.status === 'FAILED')
        process.stdout.write(`failed: ${task.error?.code} ${task.error?.message}\n`);
      else process.stdout.write('cancelled\n');
    },
  };
}

/** A value of the request's JSON schema to show in the hint: its required fields, typed. */
export function example(schema: unknown): string {
  const s = schema as {
    type?: string;
    properties?: Record<string, { type?: string }>;
    required?: string[];
  };
  if (s?.type !== 'object' || !s.properties) return '{}';
  const value: Record<string, unknown> = {};
  for (const key of s.required ?? Object.keys(s.properties)) {
    const type = s.properties[key]?.type;
    value[key] = type === 'boolean' ? true : type === 'number' || type === 'integer' ? 0 : '…';
  }
  return JSON.stringify(value);
}
