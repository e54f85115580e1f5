import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, openSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const ROOT = new URL('..', import.meta.url).pathname;
export const LOG_DIR = join(tmpdir(), 'taskhandle-bench');
export const PROFILE_DIR = join(ROOT, 'bench', 'profiles');

export interface Child {
  name: string;
  url: string;
  process: ChildProcess;
  /** Sends `{ type }` over IPC and resolves with the child's answer of the same type. */
  ask<T = Record<string, number>>(type: string, extra?: Record<string, unknown>): Promise<T>;
  stop(): Promise<void>;
}

export interface SpawnOptions {
  env?: Record<string, string>;
  /** `--cpu-prof` into bench/profiles (BENCH_PROFILE=1). */
  profile?: boolean;
  exposeGc?: boolean;
}

/**
 * Starts `script` (TypeScript, through tsx) as a child with an IPC channel; stdout and stderr
 * go to a log file, not through the harness. Resolves when the child says it listens.
 */
export function spawnChild(name: string, script: string, options: SpawnOptions = {}): Promise<Child> {
  mkdirSync(LOG_DIR, { recursive: true });
  const log = openSync(join(LOG_DIR, `${name}.log`), 'w');
  const flags = ['--import', 'tsx'];
  if (options.exposeGc) flags.unshift('--expose-gc');
  if (options.profile) {
    // One directory per child: the tsx loader thread writes a profile of its own beside the main one.
    const dir = join(PROFILE_DIR, name);
    mkdirSync(dir, { recursive: true });
    flags.unshift('--cpu-prof', `--cpu-prof-dir=${dir}`);
  }
  const child = spawn(process.execPath, [...flags, script], {
    cwd: ROOT,
    env: { ...process.env, ...options.env },
    stdio: ['ignore', log, log, 'ipc'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${name} did not start within 60 s (see ${LOG_DIR}/${name}.log)`)), 60_000);
    void exited.then(() => reject(new Error(`${name} exited before listening (see ${LOG_DIR}/${name}.log)`)));
    child.once('message', (message: { type: string; url: string }) => {
      clearTimeout(timer);
      resolve({
        name,
        url: message.url,
        process: child,
        ask: <T>(type: string, extra: Record<string, unknown> = {}) =>
          new Promise<T>((answer) => {
            const onMessage = (reply: { type: string }) => {
              if (reply.type !== type) return;
              child.off('message', onMessage);
              answer(reply as T);
            };
            child.on('message', onMessage);
            child.send({ type, ...extra });
          }),
        stop: async () => {
          if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
          const killer = setTimeout(() => child.kill('SIGKILL'), 15_000);
          await exited;
          clearTimeout(killer);
        },
      });
    });
  });
}
