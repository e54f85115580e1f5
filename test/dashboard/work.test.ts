import { describe, expect, it } from 'vitest';
// @ts-expect-error: the dashboard is plain JavaScript, served as it is
import { heldNote, workNote } from '../../web/view.js';

/** What the dashboard says of a task's attempts, schedule and holds (DESIGN §14, §17). */
describe('workNote', () => {
  const now = Date.parse('2026-01-01T12:00:00Z');
  it('says attempt n of m and when the next attempt runs while retrying', () => {
    const task = {
      status: 'WORKING',
      attempt: 2,
      maxAttempts: 3,
      runAt: '2026-01-01T12:00:04Z',
    };
    expect(workNote(task, now)).toBe('attempt 2 of 3, next attempt in 4s');
  });
  it('says what it waits for before the first attempt', () => {
    const task = { status: 'WORKING', attempt: 0, maxAttempts: 3, runAt: '2026-01-01T14:00:00Z' };
    expect(workNote(task, now)).toMatch(/^waiting until /);
  });
  it('says nothing of a task on its only attempt, and no next attempt once final', () => {
    expect(workNote({ status: 'WORKING', attempt: 1, maxAttempts: 1, runAt: null }, now)).toBe('');
    expect(workNote({ status: 'FAILED', attempt: 3, maxAttempts: 3, runAt: null }, now)).toBe(
      'attempt 3 of 3',
    );
  });
});

describe('heldNote', () => {
  it('says why a task waits to be claimed', () => {
    expect(heldNote({ status: 'WORKING', heldBecause: 'RATE_LIMIT' })).toBe(
      'held because its rate limit key is at its limit',
    );
    expect(heldNote({ status: 'WORKING', heldBecause: 'CONCURRENCY' })).toBe(
      'held because its concurrency key is at its limit',
    );
    expect(heldNote({ status: 'WORKING', heldBecause: 'TIME' })).toBe(
      'held because its time has not come',
    );
  });
  it('says nothing of a task not held, or one that ended', () => {
    expect(heldNote({ status: 'WORKING', heldBecause: null })).toBe('');
    expect(heldNote({ status: 'CANCELLED', heldBecause: 'RATE_LIMIT' })).toBe('');
  });
});
