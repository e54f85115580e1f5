import { Command } from 'commander';
import type { ClientSchedule, ClientTask, TaskhandleClient } from '../client/index.js';
import { CliError } from './errors.js';
import { columns, describeTask, span } from './format.js';
import { collectLabel } from './many.js';

/** What `taskhandle schedule …` borrows from the program: its connection and its output. */
export interface ScheduleCommandDeps {
  connect(cmd: Command): Promise<TaskhandleClient>;
  print(cmd: Command, value: unknown, human: () => string): void;
  /** Whether output is JSON (asked, or not a terminal). */
  json(cmd: Command): boolean;
  parseJson(text: string, what: string): unknown;
  /** Follows a task to its end, as `watch` does. */
  watch(client: TaskhandleClient, id: string, cmd: Command): Promise<void>;
}

const POLICY = /^(skip|once|all)$/i;
const OVERLAP = /^(allow|skip)$/i;

const when = (iso: string | null, now = Date.now()) =>
  iso === null
    ? '-'
    : `${iso} (${Date.parse(iso) >= now ? 'in ' : ''}${span(iso, now)}${Date.parse(iso) < now ? ' ago' : ''})`;

/** One schedule as a few readable lines. */
export function describeSchedule(s: ClientSchedule): string {
  return [
    `${s.key}  ${s.cron}  ${s.timezone}  ${s.kind}${s.paused ? '  PAUSED' : ''}`,
    `  next:     ${s.paused ? 'paused' : when(s.nextRunAt)}`,
    `  last:     ${when(s.lastRunAt)}${s.lastTask ? `  ${s.lastTask.id} ${s.lastTask.status}` : ''}`,
    `  missed:   ${s.missed}; overlap: ${s.overlap}`,
  ].join('\n');
}

/** Schedules as aligned columns. */
export function scheduleTable(schedules: readonly ClientSchedule[]): string {
  const now = Date.now();
  const rows = [
    ['KEY', 'CRON', 'TIMEZONE', 'KIND', 'NEXT', 'LAST', 'LAST TASK'],
    ...schedules.map((s) => [
      s.key,
      s.cron,
      s.timezone,
      s.kind,
      s.paused ? 'paused' : s.nextRunAt ? `in ${span(s.nextRunAt, now)}` : '-',
      s.lastRunAt ? `${span(s.lastRunAt, now)} ago` : '-',
      s.lastTask ? s.lastTask.status : '-',
    ]),
  ];
  return columns(rows);
}

function integer(value: string, what: string): number {
  const n = Number(value);
  if (!Number.isInteger(n)) throw new CliError(`${what} must be an integer`);
  return n;
}

/** `taskhandle schedule set|ls|rm|pause|resume|run` (DESIGN §17). */
export function scheduleCommand(deps: ScheduleCommandDeps): Command {
  const { connect, print, json } = deps;
  const schedule = new Command('schedule').description(
    'recurring work: each occurrence of a cron starts one task',
  );
  const owner = (opts: { owner?: string }) => (opts.owner ? { owner: opts.owner } : {});
  const printed = (cmd: Command, s: ClientSchedule) => print(cmd, s, () => describeSchedule(s));

  schedule
    .command('set')
    .description('create or replace schedule KEY: CRON (5 fields or @daily…) starts KIND with JSON')
    .argument('<key>')
    .argument('<cron>', 'five fields, or @hourly, @daily, @weekly, @monthly (quote it)')
    .argument('<kind>', 'task kind (see `taskhandle kinds`)')
    .argument('[json]', 'input of each task, as JSON', '{}')
    .option('--tz <zone>', 'IANA time zone, e.g. Europe/Berlin (default UTC)')
    .option('--missed <policy>', 'after a time no server ran: skip (default), once or all')
    .option('--overlap <policy>', 'allow (default), or skip while the last task is active')
    .option('--paused', 'saved paused')
    .option('--priority <n>', '-100..100 for each task', (v) => integer(v, '--priority'))
    .option('--ttl <ms>', 'retention of each task in milliseconds', (v) => integer(v, '--ttl'))
    .option('--concurrency-key <key>', 'the key its kind limits running tasks by')
    .option('--max-attempts <n>', 'attempts before a task fails', (v) =>
      integer(v, '--max-attempts'),
    )
    .option('--label <key=value>', 'a label of each task (repeatable)', collectLabel)
    .option('--owner <principal>', "admins: another principal's schedule")
    .action(async (key: string, cron: string, kind: string, text: string, opts, cmd: Command) => {
      if (opts.missed !== undefined && !POLICY.test(opts.missed))
        throw new CliError('--missed must be skip, once or all');
      if (opts.overlap !== undefined && !OVERLAP.test(opts.overlap))
        throw new CliError('--overlap must be allow or skip');
      const client = await connect(cmd);
      const saved = await client.schedules.set(
        {
          key,
          cron,
          kind,
          input: deps.parseJson(text, 'the input'),
          timezone: opts.tz,
          missed: opts.missed?.toUpperCase(),
          overlap: opts.overlap?.toUpperCase(),
          paused: opts.paused,
          priority: opts.priority,
          ttlMs: opts.ttl,
          concurrencyKey: opts.concurrencyKey,
          retry: opts.maxAttempts === undefined ? undefined : { maxAttempts: opts.maxAttempts },
          labels: opts.label,
        },
        owner(opts),
      );
      printed(cmd, saved);
    });

  schedule
    .command('ls')
    .description('list your schedules with their next and last runs')
    .option('--owner <principal>', "admins: another principal's schedules")
    .option('--first <n>', 'how many (1..100)', (v) => integer(v, '--first'), 100)
    .action(async (opts, cmd: Command) => {
      const client = await connect(cmd);
      const { schedules } = await client.schedules.list({ first: opts.first, ...owner(opts) });
      if (json(cmd)) for (const s of schedules) process.stdout.write(`${JSON.stringify(s)}\n`);
      else
        process.stdout.write(`${schedules.length ? scheduleTable(schedules) : 'no schedules'}\n`);
    });

  schedule
    .command('rm')
    .description('delete schedule KEY (the tasks it started stay)')
    .argument('<key>')
    .option('--owner <principal>', "admins: another principal's schedule")
    .action(async (key: string, opts, cmd: Command) => {
      const deleted = await (await connect(cmd)).schedules.delete(key, owner(opts));
      if (!deleted) throw new CliError(`no schedule ${key}`, 1);
      print(cmd, { key, deleted }, () => `deleted ${key}`);
    });

  for (const [name, paused] of [
    ['pause', true],
    ['resume', false],
  ] as const)
    schedule
      .command(name)
      .description(
        paused
          ? 'pause schedule KEY: no occurrence starts until it is resumed'
          : 'resume schedule KEY from its next occurrence after now',
      )
      .argument('<key>')
      .option('--owner <principal>', "admins: another principal's schedule")
      .action(async (key: string, opts, cmd: Command) => {
        printed(cmd, await (await connect(cmd)).schedules.pause(key, paused, owner(opts)));
      });

  schedule
    .command('run')
    .description("start schedule KEY's task now, out of turn; prints its handle")
    .argument('<key>')
    .option('--owner <principal>', "admins: another principal's schedule")
    .option('--follow', 'then follow it to its end, as `watch` does')
    .action(async (key: string, opts, cmd: Command) => {
      const client = await connect(cmd);
      const handle = await client.schedules.trigger(key, owner(opts));
      if (opts.follow) return deps.watch(client, handle.id, cmd);
      const task = handle.task as ClientTask;
      print(cmd, task, () => `${describeTask(task)}\n  follow:   taskhandle watch ${task.id}`);
    });
  return schedule;
}
