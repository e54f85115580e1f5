import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, openSync, readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { compiledEntry } from './compiled.js';
import { databaseEnv } from './database-env.js';
import { SECRET } from './secret.js';

/** Where `src/main.ts` runs from, as `npm start` runs it. */
export const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** A TypeScript entry running in its own Node process. */
export interface NodeProcess {
  child: ChildProcess;
  /** Resolves once the process has exited and its output has all been read. */
  exited: Promise<Exit>;
  /** Every pino JSON line written to stdout so far, parsed (other lines skipped). */
  logs(): Array<Record<string, any>>;
  stdout(): string;
  stderr(): string;
}

export interface SpawnOptions {
  args?: string[];
  /** Node's own flags, before the script (`--cpu-prof`, `--expose-gc`). */
  flags?: string[];
  /** Opens an IPC channel (`child.send`, the child's `message` events). */
  ipc?: boolean;
  /**
   * Writes stdout and stderr to this file instead of keeping them (long runs such as the
   * benchmark's servers); `logs()`, `stdout()` and `stderr()` then stay empty.
   */
  logFile?: string;
  /**
   * `compiled`: the script compiled ahead (./compiled.ts), the same code without the loader's
   * cost at each start, for the processes tests start by the dozen. `tsx`: `node --import
   * tsx`, as users run the sources (and the benchmarks measure them).
   * @default 'compiled'
   */
  loader?: 'compiled' | 'tsx';
}

/** Runs `script` (`src/main.ts`) in a Node process of its own, in exactly the environment `env`. */
export function spawnNode(
  script: string,
  env: Record<string, string | undefined>,
  options: SpawnOptions = {},
): NodeProcess {
  const output = options.logFile ? openSync(options.logFile, 'w') : 'pipe';
  const entry =
    options.loader === 'tsx'
      ? ['--import', 'tsx', script]
      : ['--enable-source-maps', compiledEntry(ROOT, script)];
  const child = spawn(
    process.execPath,
    [...(options.flags ?? []), ...entry, ...(options.args ?? [])],
    {
      cwd: ROOT,
      env,
      stdio: ['ignore', output, output, ...(options.ipc ? ['ipc' as const] : [])],
    },
  );
  if (typeof output === 'number') closeSync(output); // the child holds its own copy
  const exited = new Promise<Exit>((resolve, reject) => {
    child.once('close', (code, signal) => resolve({ code, signal }));
    child.once('error', reject);
  });
  return { child, exited, ...outputOf(child) };
}

/**
 * What a child process writes, as it writes it: stdout and stderr whole, and stdout's pino
 * lines parsed. A line that starts like JSON and does not parse (a line cut by something else
 * writing to the same stdout) is kept as `{ unparsed: line }`, for the test to see: thrown from
 * the stream's handler, it would fail whichever test file happened to be running.
 */
function outputOf(child: ChildProcess): Pick<NodeProcess, 'logs' | 'stdout' | 'stderr'> {
  const lines: Array<Record<string, any>> = [];
  let stdout = '';
  let stderr = '';
  let buffered = '';
  child.stdout?.setEncoding('utf8');
  child.stderr?.setEncoding('utf8');
  child.stdout?.on('data', (chunk: string) => {
    stdout += chunk;
    buffered += chunk;
    const parts = buffered.split('\n');
    buffered = parts.pop()!;
    for (const part of parts) {
      if (!part.startsWith('{')) continue;
      try {
        lines.push(JSON.parse(part));
      } catch {
        lines.push({ unparsed: part });
      }
    }
  });
  child.stderr?.on('data', (chunk: string) => (stderr += chunk));
  return { logs: () => lines, stdout: () => stdout, stderr: () => stderr };
}

export interface ServerOptions {
  role: 'api' | 'worker' | 'all';
  /** A Postgres database of its own: processes can share only Postgres. */
  databaseUrl: string;
  /** On top of the defaults: port 0 on loopback, the tests' `SECRET`, `LOG_LEVEL=info`. */
  env?: Record<string, string>;
  /** How long it may take to listen (a first PGlite boot initialises its data directory). @default 30_000 */
  startTimeoutMs?: number;
}

export interface ServerProcess extends NodeProcess {
  role: ServerOptions['role'];
  url: string;
  wsUrl: string;
  /** Sends `signal` unless the process has already exited; resolves with how it exited. */
  stop(signal?: NodeJS.Signals): Promise<Exit>;
}

/**
 * What every server a test starts is given, under its own `env`: loopback, a free port, the
 * tests' secret.
 */
export const SERVER_ENV = {
  PORT: '0',
  HOST: '127.0.0.1',
  AUTH_JWT_SECRET: SECRET,
  LOG_LEVEL: 'info',
} as const;

/**
 * The first of `node`'s log lines whose `msg` is `msg` (a server's listening line), once it
 * is written. Rejects, killing the process with SIGKILL, if it exits first or has not written
 * it within `timeoutMs`; `name` names the process in the error.
 */
export function loggedLine(
  node: NodeProcess,
  msg: string,
  { name = 'the process', timeoutMs = 30_000 } = {},
): Promise<Record<string, any>> {
  const { child, exited } = node;
  return new Promise((resolve, reject) => {
    const settle = () => {
      clearTimeout(timer);
      child.stdout!.off('data', onData);
    };
    const fail = (why: string) => {
      settle();
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      reject(new Error(`${name} ${why} before logging "${msg}": ${node.stderr()}`));
    };
    const onData = () => {
      const line = node.logs().find((l) => l.msg === msg);
      if (!line) return;
      settle();
      resolve(line);
    };
    const timer = setTimeout(
      () => fail(`did not start within ${timeoutMs / 1000} s`),
      timeoutMs,
    ).unref();
    child.stdout!.on('data', onData);
    onData();
    exited.then(
      ({ code, signal }) => fail(`exited (${code ?? signal})`),
      (err: Error) => fail(`failed to spawn (${err.message})`),
    );
  });
}

/**
 * Starts `script` (one of the tests' own servers, test/helpers/*-server.ts) with
 * SERVER_ENV and `env` over the test process's environment; resolves with the process and
 * its `msg` log line (which says where it listens) once it is written. Rejects as
 * `loggedLine` does.
 */
export async function spawnScript(
  script: string,
  msg: string,
  env: Record<string, string>,
): Promise<{ node: NodeProcess; line: Record<string, any> }> {
  const node = spawnNode(script, { ...process.env, ...SERVER_ENV, ...env });
  return { node, line: await loggedLine(node, msg, { name: script }) };
}

/**
 * Starts `src/main.ts` in `role` on `databaseUrl`; resolves at its "taskhandle listening" line.
 * Rejects (and kills the process) if it exits first or does not listen within 30 s.
 */
export async function spawnServer({
  role,
  databaseUrl,
  env = {},
  startTimeoutMs = 30_000,
}: ServerOptions): Promise<ServerProcess> {
  const node = spawnNode('src/main.ts', {
    ...process.env,
    ...databaseEnv(databaseUrl),
    ...SERVER_ENV,
    ROLE: role,
    ...env,
  });
  const { child, exited } = node;
  const stop = (signal: NodeJS.Signals = 'SIGTERM') => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    return exited;
  };
  const listening = await loggedLine(node, 'taskhandle listening', {
    name: role,
    timeoutMs: startTimeoutMs,
  });
  const url = listening.url as string;
  return { ...node, role, url, wsUrl: `${url.replace(/^http/, 'ws')}/graphql`, stop };
}

/**
 * Starts a server for each of `options` at once; resolves when all listen. Each is added to
 * `into` as it listens, so that stopping `into` stops it even if another fails to start.
 */
export function spawnServersInto<const Options extends readonly ServerOptions[]>(
  into: ServerProcess[],
  ...options: Options
): Promise<{ -readonly [K in keyof Options]: ServerProcess }> {
  const started = options.map(async (o) => {
    const server = await spawnServer(o);
    into.push(server);
    return server;
  });
  return Promise.all(started) as Promise<{ -readonly [K in keyof Options]: ServerProcess }>;
}

/** POSTs a GraphQL operation to the server at `url` as the bearer of `token`; the parsed body. */
export async function gqlAt(
  url: string,
  query: string,
  variables: Record<string, unknown>,
  token: string,
): Promise<any> {
  const response = await fetch(`${url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ query, variables }),
  });
  return response.json();
}

/** `npm start` in a process group of its own, as a terminal or a container runtime runs it. */
export interface NpmStart {
  /** The npm process; its pid is also the group's id. */
  npm: ChildProcess;
  /** The server's pid, from its log lines. */
  nodePid: number;
  url: string;
  /** Everything npm and the server wrote to stdout (npm's banner, the printed URLs, logs). */
  stdout(): string;
  stderr(): string;
  logs(): Array<Record<string, any>>;
  exited: Promise<Exit>;
  /** Sends `signal` to every process of the group. */
  signalGroup(signal: NodeJS.Signals): void;
}

/**
 * Runs `npm start` with SERVER_ENV and `env` over the test process's environment, in a new
 * process group, and resolves once the server logs "taskhandle listening". Rejects, killing
 * the group, if it exits first or does not listen within 120 s.
 */
export function spawnNpmStart(env: Record<string, string | undefined>): Promise<NpmStart> {
  const npm = spawn('npm', ['start'], {
    cwd: ROOT,
    env: { ...process.env, ...SERVER_ENV, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  const exited = new Promise<Exit>((resolve, reject) => {
    npm.once('close', (code, signal) => resolve({ code, signal }));
    npm.once('error', reject);
  });
  const { logs, stdout, stderr } = outputOf(npm);
  const signalGroup = (signal: NodeJS.Signals) => {
    try {
      process.kill(-npm.pid!, signal);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ESRCH') throw err;
    }
  };
  return new Promise((resolve, reject) => {
    const settle = () => {
      clearTimeout(timer);
      npm.stdout!.off('data', onData);
    };
    const fail = (why: string) => {
      settle();
      signalGroup('SIGKILL');
      reject(new Error(`npm start ${why} before listening: ${stderr()}`));
    };
    const onData = () => {
      const listening = logs().find((l) => l.msg === 'taskhandle listening');
      if (!listening) return;
      settle();
      resolve({
        npm,
        nodePid: listening.pid as number,
        url: listening.url as string,
        stdout,
        stderr,
        logs,
        exited,
        signalGroup,
      });
    };
    const timer = setTimeout(() => fail('did not start within 120 s'), 120_000).unref();
    npm.stdout!.on('data', onData);
    exited.then(
      ({ code, signal }) => fail(`exited (${code ?? signal})`),
      (err: Error) => fail(`failed to spawn (${err.message})`),
    );
  });
}

/** True while a process with this pid exists (zombies included). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * True while any live process of group `pgid` exists. Zombies do not count: a dead child the
 * container's first process has not reaped (esbuild's service, which tsx starts, is one when
 * npm's group is signalled) holds nothing, and reaping it is that process's business.
 */
export function groupAlive(pgid: number): boolean {
  if (!alive(-pgid)) return false;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue; // gone meanwhile
    }
    // After the command name in parentheses: state, ppid, pgrp.
    const [state, , pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(pgrp) === pgid && state !== 'Z') return true;
  }
  return false;
}

/** The parent pid of process `pid`, from /proc. */
export function parentOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Field 4, after the command name in parentheses (which may itself hold spaces).
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
}
