import { describe, expect, it } from 'vitest';
import { MAX_MISSED_RUNS, MISSED_AFTER_MS, planDue } from '../../src/schedules/due.js';
import { canonicalZone, Timetable } from '../../src/schedules/timetable.js';

/**
 * When occurrences fall (DESIGN §17), at fixed instants: five fields or a nickname, read in an
 * IANA zone, DST as the wall clock says; and which occurrences a due schedule starts.
 */

const at = (text: string) => Date.parse(text);
const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/** The first `n` occurrences after `from`, each found from the one before. */
function walk(cron: string, zone: string, from: string, n: number): Array<string | null> {
  const timetable = Timetable.of(cron, zone);
  const out: Array<string | null> = [];
  let instant: number | null = at(from);
  for (let i = 0; i < n && instant !== null; i++) {
    instant = timetable.after(instant);
    out.push(iso(instant));
  }
  return out;
}

describe('a schedule’s occurrences', () => {
  it('run a time Berlin skips (2026-03-29 02:30) at 03:00, the first minute after the gap', () => {
    expect(walk('30 2 * * *', 'Europe/Berlin', '2026-03-28T12:00:00Z', 3)).toEqual([
      '2026-03-29T01:00:00.000Z', // 03:00 CEST
      '2026-03-30T00:30:00.000Z',
      '2026-03-31T00:30:00.000Z',
    ]);
  });

  it('run a time Berlin repeats (2026-10-25 02:30) once, the first time', () => {
    expect(walk('30 2 * * *', 'Europe/Berlin', '2026-10-24T12:00:00Z', 2)).toEqual([
      '2026-10-25T00:30:00.000Z', // 02:30 CEST
      '2026-10-26T01:30:00.000Z', // 02:30 CET the next day; not 01:30Z on the 25th
    ]);
    // Asked between the two passes, the repeated time is not run again.
    expect(iso(Timetable.of('30 2 * * *', 'Europe/Berlin').after(at('2026-10-25T01:00:00Z')))).toBe(
      '2026-10-26T01:30:00.000Z',
    );
  });

  it('follow New York across its DST changes too', () => {
    expect(walk('30 2 * * *', 'America/New_York', '2026-03-07T12:00:00Z', 2)).toEqual([
      '2026-03-08T07:00:00.000Z', // 02:30 EST does not exist: 03:00 EDT
      '2026-03-09T06:30:00.000Z',
    ]);
    expect(walk('30 1 * * *', 'America/New_York', '2026-10-31T12:00:00Z', 2)).toEqual([
      '2026-11-01T05:30:00.000Z', // 01:30 EDT, the first of two
      '2026-11-02T06:30:00.000Z',
    ]);
  });

  it('keep the pace of an hourly schedule in real time across a repeated hour', () => {
    expect(walk('0 * * * *', 'Europe/Berlin', '2026-10-24T23:30:00Z', 3)).toEqual([
      '2026-10-25T00:00:00.000Z', // 02:00 CEST
      '2026-10-25T01:00:00.000Z', // 02:00 CET
      '2026-10-25T02:00:00.000Z', // 03:00 CET
    ]);
  });

  it('take @hourly, @daily, @weekly and @monthly, and UTC by default', () => {
    const from = '2026-05-06T10:20:00Z'; // a Wednesday
    expect(walk('@hourly', 'UTC', from, 1)).toEqual(['2026-05-06T11:00:00.000Z']);
    expect(walk('@daily', 'UTC', from, 1)).toEqual(['2026-05-07T00:00:00.000Z']);
    expect(walk('@weekly', 'UTC', from, 1)).toEqual(['2026-05-10T00:00:00.000Z']);
    expect(walk('@MONTHLY', 'Europe/Berlin', from, 1)).toEqual(['2026-05-31T22:00:00.000Z']);
  });

  it('refuse a bad cron or zone by name', () => {
    const refusal = (cron: string, zone = 'UTC') => {
      try {
        Timetable.of(cron, zone);
      } catch (err) {
        return { code: (err as { code?: string }).code, message: (err as Error).message };
      }
      return undefined;
    };
    expect(refusal('61 * * * *')).toMatchObject({ code: 'BAD_USER_INPUT' });
    expect(refusal('61 * * * *')?.message).toContain('cron "61 * * * *"');
    expect(refusal('0 * * * * *')?.message).toContain('cron "0 * * * * *" has 6 fields; five');
    expect(refusal('* * *')?.message).toContain('has 3 fields');
    expect(refusal('@yearly')?.message).toContain('@hourly, @daily, @weekly, @monthly');
    expect(refusal('0 0 31 2 *')?.message).toContain('never occurs');
    expect(refusal('0 0 * * *', 'Mars/Olympus')?.message).toContain('timezone "Mars/Olympus"');
    expect(refusal('0 0 * * *', '+02:00')?.message).toContain('timezone "+02:00"');
    expect(canonicalZone('america/new_york')).toBe('America/New_York');
  });
});

describe('a due schedule', () => {
  const everyMinute = Timetable.of('* * * * *', 'UTC');
  const t0 = at('2026-05-04T10:00:00Z');
  const m = (n: number) => t0 + n * 60_000;

  it('starts every occurrence that is only late, whatever `missed` says', () => {
    const now = m(1) + MISSED_AFTER_MS - 1_000; // 10:00 is 119 s old, 10:01 59 s
    expect(planDue(everyMinute, m(1), now, 'skip')).toEqual({
      start: [m(1)],
      skipped: false,
      next: m(2),
    });
    expect(planDue(everyMinute, m(0), m(0) + 59_000, 'skip').start).toEqual([m(0)]);
  });

  it('after a missed one, starts none, the latest, or all (oldest first)', () => {
    const now = m(10) + 5_000;
    expect(planDue(everyMinute, m(1), now, 'skip')).toEqual({
      start: [],
      skipped: true,
      next: m(11),
    });
    expect(planDue(everyMinute, m(1), now, 'once')).toEqual({
      start: [m(10)],
      skipped: true,
      next: m(11),
    });
    expect(planDue(everyMinute, m(1), now, 'all')).toEqual({
      start: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].map(m),
      skipped: false,
      next: m(11),
    });
  });

  it('starts at most a hundred missed occurrences and lets the rest go', () => {
    const plan = planDue(everyMinute, m(1), m(500) + 1, 'all');
    expect(plan.start).toHaveLength(MAX_MISSED_RUNS);
    expect(plan.start[0]).toBe(m(1));
    expect(plan.start.at(-1)).toBe(m(100));
    expect(plan).toMatchObject({ skipped: true, next: m(501) });
  });
});
