import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Command, CommanderError, Option } from 'commander';
import { ALL_SCOPES } from '../auth/principal.js';
import { ClientError, createClient, type TaskhandleClient } from '../client/index.js';
import { loadConfig } from '../config/config.js';
import { integer, parseJson, positiveInt, rateLimitArg, STATUSES, statuses } from './args.js';
import { CliError, explain } from './errors.js';
import { describeTask, table } from './format.js';
import { collectLabel, debounceOption, readStartLines, retryTask, startBatch } from './many.js';
import { scheduleCommand } from './schedules.js';
import { addSignalCommand, stepTimeline } from './steps.js';
import { mintConfiguredToken } from './token.js';
import { watchTask } from './watch.js';

const DEFAULT_URL = 'http://127.0.0.1:4000';

interface Globals {
  url?: string;
  token?: string;
  json?: boolean;
}

/** JSON for scripts when asked, or when stdout is not a terminal. */
const wantsJson = (g: Globals) => g.json === true || !process.stdout.isTTY;

/**
 * The token: --token, TASKHANDLE_TOKEN, or in development a short-lived `dev` token minted
 * with the development secret a local server keeps in DATA_DIR (what it prints at start).
 */
async function connect(g: Globals): Promise<TaskhandleClient> {
  const url = g.url ?? process.env.TASKHANDLE_URL ?? DEFAULT_URL;
  try {
    new URL(url);
  } catch {
    throw new CliError(`--url ${JSON.stringify(url)} is not a URL (e.g. ${DEFAULT_URL}).`);
  }
  let token = g.token ?? process.env.TASKHANDLE_TOKEN;
  const dataDir = process.env.DATA_DIR ?? './.data';
  if (!token && !process.env.AUTH_JWT_SECRET && existsSync(join(dataDir, 'dev-secret'))) {
    token = await mintConfiguredToken(loadConfig(), { sub: 'dev', scopes: ALL_SCOPES, ttl: '1h' });
  }
  return createClient({ url, ...(token ? { token } : {}) });
}

function print(g: Globals, value: unknown, human: () => string): void {
  process.stdout.write(`${wantsJson(g) ? JSON.stringify(value) : human()}\n`);
}

/** The `taskhandle` program. */
export function program(): Command {
  const cli = new Command('taskhandle')
    .description('Start, follow, answer and cancel taskhandle tasks from a shell.')
    .option('--url <url>', `server (env TASKHANDLE_URL; default ${DEFAULT_URL})`)
    .option('--token <jwt>', 'bearer token (env TASKHANDLE_TOKEN)')
    .option('--json', 'JSON output (the default when stdout is not a terminal)')
    .showHelpAfterError()
    .exitOverride();
  const globals = (cmd: Command) => cmd.optsWithGlobals<Globals>();

  cli
    .command('start')
    .description('start a task of KIND with input JSON; prints its handle')
    .argument('[kind]', 'task kind (see `taskhandle kinds`)')
    .argument('[json]', 'input, as JSON', '{}')
    .option('--ttl <ms>', 'retention in milliseconds', (v) => positiveInt(v, '--ttl'))
    .option('--key <key>', 'idempotency key: the same key and input return the same task')
    .option('--run-at <iso>', 'not before this instant (ISO 8601)')
    .option('--delay <ms>', 'not before now + ms', (v) => integer(v, '--delay'))
    .option('--priority <n>', '-100..100; higher is claimed first', (v) => integer(v, '--priority'))
    .option('--concurrency-key <key>', 'the key its kind limits running tasks by')
    .option('--rate-limit-key <key>', 'the key its rate limit counts starts by (default: you)')
    .option('--rate-limit <n/ms>', 'at most n starts of the kind and key in any ms', rateLimitArg)
    .option('--max-attempts <n>', 'attempts before it fails', (v) =>
      positiveInt(v, '--max-attempts'),
    )
    .option('--label <key=value>', 'a label (repeatable)', collectLabel)
    .option(
      '--debounce <key:ms[:maxMs]>',
      'join the task of this kind and key not started yet; it runs ms after the last start (at most maxMs after the first)',
      debounceOption,
    )
    .option('--follow', 'then follow it to its end, as `watch` does')
    .option('--batch', 'start every StartTaskInput of NDJSON on stdin; one handle a line')
    .action(async (kind: string | undefined, json: string, opts, cmd: Command) => {
      const g = globals(cmd);
      const client = await connect(g);
      if (opts.batch) {
        const entries = await readStartLines(process.stdin);
        return startBatch(client, entries, (task) =>
          print(g, task, () => `${task.id}  ${task.kind}  ${task.status}`),
        );
      }
      if (!kind) throw new CliError('start needs a KIND (or --batch with NDJSON on stdin).');
      const handle = await client.start(kind, parseJson(json, 'the input'), {
        ttlMs: opts.ttl,
        idempotencyKey: opts.key,
        runAt: opts.runAt,
        delayMs: opts.delay,
        priority: opts.priority,
        concurrencyKey: opts.concurrencyKey,
        rateLimitKey: opts.rateLimitKey,
        rateLimit: opts.rateLimit,
        retry: opts.maxAttempts === undefined ? undefined : { maxAttempts: opts.maxAttempts },
        labels: opts.label,
        debounce: opts.debounce,
      });
      if (opts.follow) return watch(client, handle.id, g);
      const startTask = handle.task!;
      print(
        g,
        startTask,
        () => `${describeTask(startTask)}\n  follow:   taskhandle watch ${startTask.id}`,
      );
    });

  cli
    .command('get')
    .description('show a task')
    .argument('<id>')
    .option('--steps', 'with its journal: steps, waits and children, in the order they ran')
    .action(async (id: string, opts, cmd: Command) => {
      const g = globals(cmd);
      const task = await (await connect(g)).get(id, { steps: opts.steps === true });
      if (!task) throw new CliError(`no task ${id} (unknown, expired, or not yours)`, 1);
      print(g, task, () =>
        opts.steps ? `${describeTask(task)}\n${stepTimeline(task)}` : describeTask(task),
      );
    });

  cli
    .command('watch')
    .description('follow a task until it ends: exit 0 completed, 1 failed, 130 cancelled')
    .argument('<id>')
    .action(async (id: string, _opts, cmd: Command) => {
      const g = globals(cmd);
      await watch(await connect(g), id, g);
    });

  cli
    .command('cancel')
    .description('cancel a task')
    .argument('<id>')
    .action(async (id: string, _opts, cmd: Command) => {
      const g = globals(cmd);
      const task = await (await connect(g)).handle(id).cancel();
      print(g, task, () => describeTask(task));
    });

  cli
    .command('retry')
    .description('start a failed or cancelled task again as a new task; prints its handle')
    .argument('<id>')
    .option('--from-step <name>', 'keep the journal before this step: it and later ones run again')
    .action(async (id: string, opts, cmd: Command) => {
      const g = globals(cmd);
      const task = await retryTask(await connect(g), id, opts.fromStep);
      print(g, task, () => `${describeTask(task)}\n  follow:   taskhandle watch ${task.id}`);
    });

  cli
    .command('answer')
    .description('answer the input request KEY of a task with JSON')
    .argument('<id>')
    .argument('<key>')
    .argument('<json>')
    .action(async (id: string, key: string, json: string, _opts, cmd: Command) => {
      const g = globals(cmd);
      const value = parseJson(json, 'the answer');
      const task = await (await connect(g)).handle(id).answer(key, value);
      print(g, task, () => describeTask(task));
    });

  cli
    .command('ls')
    .description('list your tasks, newest first')
    .option('--status <statuses>', `comma-separated: ${STATUSES.join(', ')}`)
    .option('--owner <principal>', "admins: another principal's tasks")
    .option('--parent <id>', 'the children of this task')
    .addOption(
      new Option('--first <n>', 'how many (1..100)')
        .default(20)
        .argParser((v) => positiveInt(v, '--first')),
    )
    .action(async (opts, cmd: Command) => {
      const g = globals(cmd);
      const status = opts.status ? statuses(opts.status) : null;
      const { tasks: nodes } = await (await connect(g)).list({
        first: opts.first,
        ...(status ? { status } : {}),
        ...(opts.owner ? { owner: opts.owner } : {}),
        ...(opts.parent ? { parentId: opts.parent } : {}),
      });
      if (wantsJson(g)) for (const t of nodes) process.stdout.write(`${JSON.stringify(t)}\n`);
      else process.stdout.write(`${nodes.length ? table(nodes) : 'no tasks'}\n`);
    });

  cli
    .command('kinds')
    .description('list the task kinds this server runs')
    .action(async (_opts, cmd: Command) => {
      const g = globals(cmd);
      const taskKinds = await (await connect(g)).kinds();
      if (wantsJson(g)) for (const k of taskKinds) process.stdout.write(`${JSON.stringify(k)}\n`);
      else
        for (const k of taskKinds) process.stdout.write(`${k.name.padEnd(10)} ${k.description}\n`);
    });

  addSignalCommand(cli, {
    connect: (cmd) => connect(globals(cmd)),
    print: (cmd, value, human) => print(globals(cmd), value, human),
    parseJson,
  });

  cli.addCommand(
    scheduleCommand({
      connect: (cmd) => connect(globals(cmd)),
      print: (cmd, value, human) => print(globals(cmd), value, human),
      json: (cmd) => wantsJson(globals(cmd)),
      parseJson,
      watch: (client, id, cmd) => watch(client, id, globals(cmd)),
    }),
  );

  cli
    .command('token')
    .description(
      'mint a token with the server configuration here (AUTH_JWT_SECRET or the development secret)',
    )
    .requiredOption('--sub <principal>', 'the principal')
    .option('--scope <scopes>', 'space-separated scopes', 'tasks:read tasks:write')
    .option('--ttl <duration>', 'lifetime, e.g. 1h or 30d', '1h')
    .action(async (opts, cmd: Command) => {
      const token = await mintConfiguredToken(loadConfig(), {
        sub: opts.sub,
        scopes: String(opts.scope).split(/\s+/).filter(Boolean),
        ttl: opts.ttl,
      });
      print(globals(cmd), { token }, () => token);
    });
  return cli;
}

async function watch(client: TaskhandleClient, id: string, g: Globals): Promise<void> {
  process.exitCode = await watchTask(client, id, { bar: !wantsJson(g) });
}

/** Runs the command line; every failure is one line on stderr and a non-zero exit code. */
export async function run(argv: readonly string[]): Promise<void> {
  try {
    await program().parseAsync([...argv], { from: 'user' });
  } catch (err) {
    if (err instanceof CommanderError) {
      process.exitCode = err.exitCode === 0 ? 0 : 2; // commander has printed its message
      return;
    }
    const failure = err instanceof ClientError ? explain(err) : err;
    const message = failure instanceof Error ? failure.message : String(failure);
    process.stderr.write(`taskhandle: ${message}\n`);
    process.exitCode = failure instanceof CliError ? failure.exitCode : 2;
  }
}
