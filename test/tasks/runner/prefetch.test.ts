import { describe, expect, it } from 'vitest';
import { Prefetch } from '../../../src/tasks/runner/prefetch.js';

/** How many tasks a runner claims ahead of its slots, as claims come back full or short. */
describe('Prefetch', () => {
  it('doubles while claims come back full, up to a tenth of a second of quick work, then 1 000', () => {
    const p = new Prefetch(24, 8);
    for (let i = 0; i < 20; i++) p.ran(0.05);
    const sizes = [];
    for (let i = 0; i < 8; i++) {
      p.claimed(true);
      sizes.push(p.now);
    }
    expect(sizes).toEqual([48, 96, 192, 384, 768, 1_000, 1_000, 1_000]);
  });

  it('goes back to its own size once a claim finds fewer than it asked for', () => {
    const p = new Prefetch(24, 8);
    p.ran(0.05);
    p.claimed(true);
    p.claimed(true);
    expect(p.now).toBe(96);
    p.claimed(false);
    expect(p.now).toBe(24);
  });

  it('grows only as far as the work it holds is short: 8 slots of 10 ms tasks, 80', () => {
    const p = new Prefetch(24, 8);
    for (let i = 0; i < 50; i++) p.ran(10);
    for (let i = 0; i < 5; i++) p.claimed(true);
    expect(p.now).toBe(80);
  });

  it('keeps the prefetch it was given for slow tasks, and none when given none', () => {
    const slow = new Prefetch(24, 8);
    slow.ran(1_000);
    slow.claimed(true);
    expect(slow.now).toBe(24);
    const none = new Prefetch(0, 8);
    none.ran(0.01);
    none.claimed(true);
    expect(none.now).toBe(0);
  });

  it('does not grow before any handler has returned', () => {
    const p = new Prefetch(24, 8);
    p.claimed(true);
    expect(p.now).toBe(24);
  });
});
