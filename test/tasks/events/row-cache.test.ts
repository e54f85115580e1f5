import { describe, expect, it } from 'vitest';
import type { TaskRow } from '../../../src/db/types.js';
import { RowCache } from '../../../src/tasks/events/row-cache.js';

/**
 * The row cache (src/tasks/events/row-cache.ts) with reads the test answers by hand, so the
 * order of reads, commits and announcements is the test's to choose.
 */

const ID = '5b8c1e2a-3f4d-4e6f-8a9b-0c1d2e3f4a5b';
const rowAt = (version: number) =>
  ({
    id: ID,
    version,
    status: 'working',
    input: {},
    result: null,
    error: null,
    input_request: null,
  }) as unknown as TaskRow;

/** A cache whose reads wait until the test answers them, in the order they were made. */
function manualCache() {
  const answers: Array<(row: TaskRow) => void> = [];
  const cache = new RowCache(() => new Promise<TaskRow>((resolve) => answers.push(resolve)));
  cache.connected();
  return { cache, answers };
}

describe('RowCache', () => {
  it('keeps no row read before a change announced while the read was out, even once others stopped joining it', async () => {
    const { cache, answers } = manualCache();
    const first = cache.read(ID); // begins before version 3 and 4 are committed
    cache.changed(ID, 3); // committed here: later readers no longer join `first`
    cache.changed(ID, 4); // announced by another process while `first` is still out
    answers[0]!(rowAt(3));
    expect((await first)?.version).toBe(3);
    // Version 3 is older than what was announced: the next read asks again.
    const next = cache.read(ID);
    expect(answers).toHaveLength(2);
    answers[1]!(rowAt(4));
    expect((await next)?.version).toBe(4);
    expect((await cache.read(ID))?.version).toBe(4); // now from the cache
    expect(answers).toHaveLength(2);
  });

  it('keeps a read that returned the newest version announced', async () => {
    const { cache, answers } = manualCache();
    const first = cache.read(ID);
    cache.changed(ID, 3);
    answers[0]!(rowAt(3));
    await first;
    expect((await cache.read(ID))?.version).toBe(3);
    expect(answers).toHaveLength(1);
  });

  it('keeps a row this process wrote, unless a newer version was announced or the listener dropped meanwhile', async () => {
    const { cache, answers } = manualCache();
    // Nothing announced while the write was out: its row answers the next read.
    let write = cache.writing(ID);
    cache.changed(ID, 2); // its own NOTIFY, before its answer
    cache.wrote(write, rowAt(2));
    expect((await cache.read(ID))?.version).toBe(2);
    expect(answers).toHaveLength(0);

    // Version 4 announced (committed elsewhere) while the write of version 3 was out.
    write = cache.writing(ID);
    cache.changed(ID, 4);
    cache.wrote(write, rowAt(3));
    const read = cache.read(ID);
    expect(answers).toHaveLength(1);
    answers[0]!(rowAt(4));
    expect((await read)?.version).toBe(4);

    // The listening connection went down and came back while the write of version 5 was out:
    // what was announced meanwhile is unknown.
    write = cache.writing(ID);
    cache.disconnected();
    cache.connected();
    cache.wrote(write, rowAt(5));
    const after = cache.read(ID);
    expect(answers).toHaveLength(2);
    answers[1]!(rowAt(5));
    expect((await after)?.version).toBe(5);
  });
});
