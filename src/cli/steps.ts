import type { Command } from 'commander';
import type { ClientStep, ClientTask, TaskhandleClient } from '../client/index.js';
import { columns, describeTask, span } from './format.js';

/** DESIGN §16 from a shell: a task's step timeline (`get --steps`) and `signal`. */

const STATE: Record<ClientStep['state'], string> = {
  RUNNING: 'running',
  COMPLETED: 'done',
  FAILED: 'failed',
  SLEEPING: 'sleeping',
  WAITING_SIGNAL: 'waiting',
  WAITING_CHILD: 'waiting',
};

const ago = (iso: string | null, now: number) => (iso ? `${span(iso, now)} ago` : '-');

/** What a step says beyond its state: its wake-up, its signal, its child, its error. */
function noteOf(task: ClientTask, step: ClientStep, now: number): string {
  const notes: string[] = [];
  if (step.wakeAt && step.state === 'SLEEPING') notes.push(`wakes in ${span(step.wakeAt, now)}`);
  if (step.state === 'WAITING_SIGNAL') {
    notes.push(`for signal ${step.name}: taskhandle signal ${task.id} ${step.name} JSON`);
    if (step.wakeAt) notes.push(`times out in ${span(step.wakeAt, now)}`);
    if (step.signalUrl) notes.push(`or POST ${step.signalUrl}`);
  }
  if (step.childId)
    notes.push(`${step.state === 'WAITING_CHILD' ? 'for child' : 'child'} ${step.childId}`);
  if (step.error) notes.push(`${step.error.code}: ${step.error.message}`);
  return notes.join('; ');
}

/**
 * A task's journal (`ClientTask.steps`) as aligned lines under the task's description, in the
 * order its entries first ran.
 */
export function stepTimeline(task: ClientTask, now = Date.now()): string {
  const steps = task.steps ?? [];
  if (steps.length === 0) return '  steps:    none journalled';
  const rows = [
    ['STEP', 'STATE', 'RUNS', 'STARTED', 'ENDED', 'NOTE'],
    ...steps.map((step) => [
      step.name,
      STATE[step.state] ?? step.state.toLowerCase(),
      step.attempts > 0 ? String(step.attempts) : '-',
      ago(step.startedAt, now),
      ago(step.endedAt, now),
      noteOf(task, step, now),
    ]),
  ];
  const lines = columns(rows).split('\n');
  return ['  steps:', ...lines.map((line) => `    ${line}`)].join('\n');
}

/** What the commands borrow from the program: its connection and its output. */
export interface StepCommandDeps {
  connect(cmd: Command): Promise<TaskhandleClient>;
  print(cmd: Command, value: unknown, human: () => string): void;
  parseJson(text: string, what: string): unknown;
}

/** `taskhandle signal ID NAME JSON`. */
export function addSignalCommand(cli: Command, deps: StepCommandDeps): void {
  cli
    .command('signal')
    .description("send the signal NAME with a JSON payload to a task's handler (ctx.waitForSignal)")
    .argument('<id>')
    .argument('<name>')
    .argument('<json>', 'the payload, as JSON')
    .action(async (id: string, name: string, json: string, _opts, cmd: Command) => {
      const payload = deps.parseJson(json, 'the payload');
      const task = await (await deps.connect(cmd)).signal(id, name, payload);
      deps.print(cmd, task, () => describeTask(task));
    });
}
