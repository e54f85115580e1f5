import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ROOT } from './process.js';

const LOCK = join(ROOT, 'node_modules/.cache/taskhandle-dist.lock');

/**
 * Waits until no other test file builds or uses `dist/`, and holds it until the returned
 * function is called: `npm run build` (and `npm pack`, through prepack) empties it first, and
 * test files run two at a time. A lock left by a process that is gone is taken over.
 */
export async function lockDist(): Promise<() => void> {
  mkdirSync(join(LOCK, '..'), { recursive: true });
  for (;;) {
    try {
      mkdirSync(LOCK);
      writeFileSync(join(LOCK, 'pid'), String(process.pid));
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      if (!holderAlive()) rmSync(LOCK, { recursive: true, force: true });
      else await sleep(250);
    }
  }
  return () => rmSync(LOCK, { recursive: true, force: true });
}

function holderAlive(): boolean {
  let pid: number;
  try {
    pid = Number(readFileSync(join(LOCK, 'pid'), 'utf8'));
  } catch {
    return true; // being written: its holder has just made it
  }
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
