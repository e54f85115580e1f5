import { describe, expect, it } from 'vitest';
import type { TaskRow } from '../../../src/db/types.js';
import { Handout, type RowWatcher } from '../../../src/tasks/events/handout.js';

/** How a changed row reaches the watchers of one task, many of them. */

const row = (version: number) => ({ version }) as TaskRow;
const turn = () => new Promise((resolve) => setImmediate(resolve));

function watchers(count: number) {
  const seen: number[][] = Array.from({ length: count }, () => []);
  const set = new Set<RowWatcher>(seen.map((versions) => (r) => versions.push(r!.version)));
  return { seen, set };
}

describe('the handout of a row to its watchers', () => {
  it('serves the first 256 at once and the rest in later turns, every row in order', async () => {
    const { seen, set } = watchers(1000);
    const handout = new Handout(set, (err) => {
      throw err;
    });
    handout.give(row(1));
    handout.give(row(2));
    expect(seen.slice(0, 256).every((v) => v.join() === '1')).toBe(true);
    expect(seen.slice(256).every((v) => v.length === 0)).toBe(true);
    while (seen.some((v) => v.length < 2)) await turn();
    expect(seen.every((v) => v.join() === '1,2')).toBe(true);
  });

  it('does not call a watcher that stopped watching before its turn', async () => {
    const { seen, set } = watchers(600);
    const handout = new Handout(set, (err) => {
      throw err;
    });
    handout.give(row(1));
    const last = [...set].at(-1)!;
    set.delete(last);
    while (seen.slice(0, 599).some((v) => v.length < 1)) await turn();
    await turn();
    expect(seen[599]).toEqual([]);
  });

  it('hands the row on to the others when one watcher throws', () => {
    const { seen, set } = watchers(3);
    const thrown: unknown[] = [];
    const failing: RowWatcher = () => {
      throw new Error('watcher failed');
    };
    const all = new Set([failing, ...set]);
    new Handout(all, (err) => thrown.push(err)).give(row(7));
    expect(seen).toEqual([[7], [7], [7]]);
    expect(thrown).toHaveLength(1);
  });
});
