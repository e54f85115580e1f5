import { describe, expect, it } from 'vitest';
import { type NodeProcess, spawnNode } from '../helpers/process.js';

/**
 * The server writes its log lines in batches (src/log.ts): none may be lost when the process
 * ends, however it ends, and none may wait long in a quiet process.
 */

const writer = (how: string, lines: number) =>
  spawnNode(
    'test/helpers/log-writer.ts',
    { ...process.env },
    { args: [how, String(lines)], ipc: how === 'wait' },
  );

const numbers = (logs: Array<Record<string, any>>) => logs.map((line) => line.n);

/** Resolves once `node` has written `count` log lines (its output is read as it comes). */
function written(node: NodeProcess, count: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const check = () => {
      if (node.logs().length < count) return;
      node.child.stdout!.off('data', check);
      resolve();
    };
    node.child.stdout!.on('data', check);
    node.exited.then(() => reject(new Error(`exited after ${node.logs().length} lines`)));
    check();
  });
}

describe('log lines written in batches', () => {
  for (const [how, code] of [
    ['exit', 3],
    ['crash', 1],
    ['end', 0],
  ] as const)
    it(`are all written when the process ends by ${how}`, async () => {
      // More than one batch's worth, and the last ones still in the buffer.
      const p = writer(how, 500);
      expect((await p.exited).code).toBe(code);
      expect(numbers(p.logs())).toEqual(Array.from({ length: 500 }, (_, i) => i));
      if (how === 'crash') expect(p.stderr()).toContain('crashed on purpose');
    });

  it('are written while the process goes on, a few lines at a time', async () => {
    const p = writer('wait', 2);
    // Two short lines are far below a batch: they go out on the flush timer, not at exit.
    await written(p, 2);
    p.child.send('more');
    await written(p, 4);
    expect(numbers(p.logs())).toEqual([0, 1, 2, 3]);
    p.child.kill('SIGTERM');
    await p.exited;
  });
});
