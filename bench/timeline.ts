import { subscribe } from 'node:diagnostics_channel';
import pg from 'pg';
import { WebSocket } from 'ws';
import { RunningTask } from '../src/tasks/runner/running-task.js';
import { TaskService } from '../src/tasks/service.js';

/**
 * Marks along the event path in a bench server (BENCH_TIMELINE=1, see bench/serve.ts), for
 * bench/event-timeline.ts: each mark is a name and the wall-clock instant it happened, in
 * milliseconds with sub-millisecond precision, comparable across the processes of this
 * machine. A diagnostic only: it wraps prototypes of pg, ws and the task service, which no
 * shipped path does.
 */

export interface Mark {
  at: number;
  name: string;
}

const marks: Mark[] = [];
const now = () => performance.timeOrigin + performance.now();
const mark = (name: string) => marks.push({ at: now(), name });

/** The marks since the last reset, handed over once. */
export function takeMarks(): Mark[] {
  return marks.splice(0);
}

/** What a statement on the event path is, by its text; others (backstop claims…) are left out. */
function statementOf(text: string): string | undefined {
  if (/insert into tasks/.test(text)) return 'insert';
  if (/update tasks t set\s+status = case/.test(text)) return 'outcome';
  if (/taskhandle_claim_tasks/.test(text)) return 'claim';
  if (/^select \* from "?tasks"? where "?id"? = \$1/.test(text)) return 'row read';
  return undefined;
}

subscribe('http.server.request.start', () => mark('startTask request arrived'));
subscribe('http.server.response.finish', () => mark('startTask answer written'));

type Query = (this: pg.Client, ...args: unknown[]) => unknown;
const query = pg.Client.prototype.query as unknown as Query;
(pg.Client.prototype as unknown as { query: Query }).query = function (...args) {
  const first = args[0] as string | { text?: string } | undefined;
  const text = typeof first === 'string' ? first : (first?.text ?? '');
  const statement = statementOf(text.replace('/* prepared */', '').trim());
  if (statement) mark(`${statement} sent`);
  const result = query.apply(this, args);
  if (statement && result instanceof Promise)
    result.then(
      () => mark(`${statement} answered`),
      () => {},
    );
  return result;
};

const emit = pg.Client.prototype.emit;
pg.Client.prototype.emit = function (event: string | symbol, ...args: unknown[]) {
  if (event === 'notification') {
    const { channel } = args[0] as { channel: string };
    if (channel === 'taskhandle_task') mark('NOTIFY received');
  }
  return emit.call(this, event, ...args);
};

const start = TaskService.prototype.start;
TaskService.prototype.start = function (...args) {
  mark('startTask resolver');
  const started = start.apply(this, args);
  started.then(
    () => mark('startTask stored'),
    () => {},
  );
  return started;
};

const run = RunningTask.prototype.start;
RunningTask.prototype.start = function (...args) {
  mark('handler started');
  return run.apply(this, args);
};

const wsEmit = WebSocket.prototype.emit;
WebSocket.prototype.emit = function (event: string | symbol, ...args: unknown[]) {
  if (event === 'message' && String(args[0]).includes('"subscribe"')) mark('subscribe arrived');
  return wsEmit.call(this, event, ...args);
};

const send = WebSocket.prototype.send;
WebSocket.prototype.send = function (this: WebSocket, ...args: Parameters<WebSocket['send']>) {
  const text = String(args[0]);
  if (text.includes('"type":"next"'))
    mark(text.includes('"COMPLETED"') ? 'COMPLETED frame sent' : 'first frame sent');
  return send.apply(this, args);
} as WebSocket['send'];
