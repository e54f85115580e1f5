import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { compiledEntry } from './compiled.js';
import { ROOT } from './process.js';

/** The `taskhandle` command of this checkout. */
export const BIN = join(ROOT, 'bin/taskhandle.js');

/**
 * The command as the tests run it: what bin/taskhandle.js runs, compiled ahead (./compiled.ts),
 * for half the CPU of its start through tsx (tests run it some fifty times). The bin itself
 * is run through a link (test/cli/cli.test.ts).
 */
const command = () => [
  process.execPath,
  '--enable-source-maps',
  compiledEntry(ROOT, 'test/helpers/cli-main.ts'),
];

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface CliOptions {
  /** The whole environment besides PATH (server, token, DATA_DIR). */
  env: Record<string, string>;
  cwd?: string;
  /** Written to the command's stdin, which is then closed. */
  stdin?: string;
  /** Sees stdout as it grows. */
  onOutput?: (stdout: string) => void;
}

/** Runs `command` (argv[0] included) as a real process and collects what it prints. */
export function runCommand(command: string[], options: CliOptions): Promise<CliRun> {
  const child = spawn(command[0]!, command.slice(1), {
    ...(options.cwd ? { cwd: options.cwd } : {}),
    env: { PATH: process.env.PATH ?? '', ...options.env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
    options.onOutput?.(stdout);
  });
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  child.stdin.end(options.stdin ?? '');
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** `taskhandle args…`, piped. */
export const runCli = (args: string[], options: CliOptions) =>
  runCommand([...command(), ...args], options);

/** `taskhandle args…` on a pseudo-terminal, as a person runs it: `script` gives it a tty. */
export const runCliOnTerminal = (args: string[], options: CliOptions) =>
  runCommand(
    ['script', '-qfec', [...command(), ...args].map(quote).join(' '), '/dev/null'],
    options,
  );
const quote = (arg: string) => `'${arg.replaceAll("'", `'\\''`)}'`;

/** Each line `taskhandle` printed, parsed: what it prints when piped is JSON, a line each. */
export const jsonLines = (stdout: string) =>
  stdout
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line));
