import { mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT, spawnNode } from '../test/helpers/process.js';

export { ROOT };
export const LOG_DIR = join(tmpdir(), 'taskhandle-bench');
export const PROFILE_DIR = join(ROOT, 'bench', 'profiles');

export interface Child {
  name: string;
  url: string;
  /** Sends `{ type }` over IPC and resolves with the child's answer of the same type. */
  ask<T = Record<string, number>>(type: string, extra?: Record<string, unknown>): Promise<T>;
  stop(): Promise<void>;
}

export interface ChildOptions {
  env?: Record<string, string>;
  /** `--cpu-prof` into bench/profiles (BENCH_PROFILE=1). */
  profile?: boolean;
  exposeGc?: boolean;
}

/**
 * Starts `script` the way the tests start theirs (test/helpers/process.ts), with an IPC
 * channel and its output in a log file, not through the harness. Resolves when the child
 * says it listens.
 */
export function spawnChild(
  name: string,
  script: string,
  options: ChildOptions = {},
): Promise<Child> {
  mkdirSync(LOG_DIR, { recursive: true });
  const logFile = join(LOG_DIR, `${name}.log`);
  const flags: string[] = [];
  if (options.exposeGc) flags.push('--expose-gc');
  if (options.profile) {
    // One directory per child: the tsx loader thread writes a profile of its own beside the main one.
    const dir = join(PROFILE_DIR, name);
    mkdirSync(dir, { recursive: true });
    flags.push('--cpu-prof', `--cpu-prof-dir=${dir}`);
  }
  const { child, exited } = spawnNode(
    script,
    { ...process.env, ...options.env },
    { flags, ipc: true, logFile, loader: 'tsx' },
  );
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`${name} did not start within 60 s (see ${logFile})`)),
      60_000,
    );
    void exited.then(() => reject(new Error(`${name} exited before listening (see ${logFile})`)));
    child.once('message', (message: { type: string; url: string }) => {
      clearTimeout(timer);
      resolve({
        name,
        url: message.url,
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
