import { Cron } from 'croner';
import { ServiceError } from '../errors.js';

/** The nicknames a schedule's `cron` may be instead of five fields (DESIGN §17). */
const NICKNAMES = new Set(['@hourly', '@daily', '@weekly', '@monthly']);

/** The longest `cron` text taken: five fields with long lists fit in far less. */
const MAX_CRON_LENGTH = 256;

function refuse(message: string): never {
  throw new ServiceError('BAD_USER_INPUT', message);
}

/**
 * The zone's canonical IANA name (`america/new_york` → `America/New_York`, `Etc/UTC` → `UTC`).
 * @throws ServiceError BAD_USER_INPUT naming the zone when it is no IANA time zone
 */
export function canonicalZone(timezone: string): string {
  // Offsets such as "+02:00" are zones to Intl, but have no DST and no place: refused.
  if (typeof timezone !== 'string' || !/^[A-Za-z]/.test(timezone))
    refuse(`timezone ${JSON.stringify(timezone)} is not an IANA time zone (e.g. Europe/Berlin).`);
  try {
    return new Intl.DateTimeFormat('en-US', { timeZone: timezone }).resolvedOptions().timeZone;
  } catch {
    refuse(`timezone ${JSON.stringify(timezone)} is not an IANA time zone (e.g. Europe/Berlin).`);
  }
}

/**
 * When a schedule's occurrences fall: its cron read in its time zone, by croner. Wall-clock
 * times rule across DST changes: a time the clock skips runs at the first minute after the
 * gap, a time it repeats runs once (the first time). That holds for every time the hour and
 * minute fields name without `*` or a step (`30 2 * * *`, `0 9,17 * * 1-5`); a schedule whose
 * hour or minute is a wildcard or a step (`0 * * * *`, every fifteen minutes) keeps its pace in
 * real time instead, as Vixie cron does: it runs in both passes of a repeated hour, and its
 * times inside a skipped hour do not exist.
 */
export class Timetable {
  private readonly cron: Cron;

  private constructor(
    readonly expression: string,
    readonly timezone: string,
  ) {
    this.cron = new Cron(expression, {
      timezone,
      mode: '5-part',
      fixedTimeRule: 'no-wildcard',
      // Vixie cron's rule: a day-of-month and a day-of-week both given match either.
      domAndDow: false,
    });
  }

  /**
   * Reads `cron` (five fields, or @hourly/@daily/@weekly/@monthly) in `timezone`.
   * @throws ServiceError BAD_USER_INPUT naming the cron or the zone at fault
   */
  static of(cron: string, timezone: string): Timetable {
    const zone = canonicalZone(timezone);
    if (typeof cron !== 'string' || cron.trim() === '' || cron.length > MAX_CRON_LENGTH)
      refuse(`cron must be five fields or one of ${[...NICKNAMES].join(', ')}.`);
    const expression = cron.trim().replace(/\s+/g, ' ');
    if (expression.startsWith('@')) {
      if (!NICKNAMES.has(expression.toLowerCase()))
        refuse(`cron ${JSON.stringify(cron)}: the nicknames are ${[...NICKNAMES].join(', ')}.`);
    } else if (expression.split(' ').length !== 5) {
      refuse(
        `cron ${JSON.stringify(cron)} has ${expression.split(' ').length} fields; five are needed (minute hour day-of-month month day-of-week), or one of ${[...NICKNAMES].join(', ')}.`,
      );
    }
    let timetable: Timetable;
    try {
      timetable = new Timetable(expression, zone);
    } catch (err) {
      const why = err instanceof Error ? err.message.replace(/^CronPattern: /, '') : String(err);
      refuse(`cron ${JSON.stringify(cron)} is not a five-field cron expression: ${why}`);
    }
    if (timetable.after(Date.UTC(2000, 0, 1)) === null)
      refuse(`cron ${JSON.stringify(cron)} never occurs.`);
    return timetable;
  }

  /** The first occurrence strictly after `instant` (epoch ms); null if there is none. */
  after(instant: number): number | null {
    return this.cron.nextRun(new Date(instant))?.getTime() ?? null;
  }

  /** The last occurrence at or before `instant`; null if there is none. */
  atOrBefore(instant: number): number | null {
    return this.cron.previousRuns(1, new Date(instant + 1))[0]?.getTime() ?? null;
  }
}
