import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { SECRET } from './app.js';

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

/** Runs `script` with `node --import tsx`, as users do, in exactly the environment `env`. */
export function spawnNode(script: string, env: Record<string, string | undefined>, args: string[] = []): NodeProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', script, ...args], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise<Exit>((resolve, reject) => {
    child.once('close', (code, signal) => resolve({ code, signal }));
    child.once('error', reject);
  });
  const lines: Array<Record<string, any>> = [];
  let stdout = '';
  let stderr = '';
  let buffered = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
    buffered += chunk.toString();
    const parts = buffered.split('\n');
    buffered = parts.pop()!;
    for (const part of parts) if (part.startsWith('{')) lines.push(JSON.parse(part));
  });
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return { child, exited, logs: () => lines, stdout: () => stdout, stderr: () => stderr };
}

export interface ServerOptions {
  role: 'api' | 'worker' | 'all';
  /** A Postgres database of its own: processes can share only Postgres. */
  databaseUrl: string;
  /** On top of the defaults: port 0 on loopback, the tests' `SECRET`, `LOG_LEVEL=info`. */
  env?: Record<string, string>;
}

export interface ServerProcess extends NodeProcess {
  role: ServerOptions['role'];
  url: string;
  wsUrl: string;
  /** Sends `signal` unless the process has already exited; resolves with how it exited. */
  stop(signal?: NodeJS.Signals): Promise<Exit>;
}

/**
 * Starts `src/main.ts` in `role` on `databaseUrl`; resolves at its "taskhandle listening" line.
 * Rejects (and kills the process) if it exits first or does not listen within 30 s.
 */
export function spawnServer({ role, databaseUrl, env = {} }: ServerOptions): Promise<ServerProcess> {
  const node = spawnNode('src/main.ts', {
    ...process.env,
    DATABASE_URL: databaseUrl,
    PORT: '0',
    HOST: '127.0.0.1',
    AUTH_JWT_SECRET: SECRET,
    LOG_LEVEL: 'info',
    ROLE: role,
    ...env,
  });
  const { child, exited } = node;
  const stop = (signal: NodeJS.Signals = 'SIGTERM') => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    return exited;
  };
  return new Promise((resolve, reject) => {
    const settle = () => {
      clearTimeout(timer);
      child.stdout!.off('data', onData);
    };
    const fail = (why: string) => {
      settle();
      void stop('SIGKILL');
      reject(new Error(`${role} ${why} before listening: ${node.stderr()}`));
    };
    const onData = () => {
      const listening = node.logs().find((l) => l.msg === 'taskhandle listening');
      if (!listening) return;
      settle();
      const url = listening.url as string;
      resolve({ ...node, role, url, wsUrl: `${url.replace(/^http/, 'ws')}/graphql`, stop });
    };
    const timer = setTimeout(() => fail('did not start within 30 s'), 30_000).unref();
    child.stdout!.on('data', onData);
    exited.then(
      ({ code, signal }) => fail(`exited (${code ?? signal})`),
      (err: Error) => fail(`failed to spawn (${err.message})`),
    );
  });
}

/** POSTs a GraphQL operation to the server at `url` as the bearer of `token`; the parsed body. */
export async function gqlAt(url: string, query: string, variables: Record<string, unknown>, token: string): Promise<any> {
  const response = await fetch(`${url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ query, variables }),
  });
  return response.json();
}
