import pg from 'pg';

/** pg's OID of `timestamptz`. */
const TIMESTAMPTZ = 1184;

const digits2 = (text: string, at: number) =>
  (text.charCodeAt(at) - 48) * 10 + text.charCodeAt(at + 1) - 48;

/**
 * A `timestamptz` as Postgres writes it under the ISO DateStyle with a whole-hour offset
 * (`2026-12-05 03:45:15.123456+00`), read without pg's general parser (postgres-date), whose
 * regular expression costs ~8× as much: every task row carries five of them, and a worker reads
 * two rows a task. Anything else (another DateStyle, an offset with minutes, BC, `infinity`, a
 * year before 100) goes to pg's own parser. Fractions are cut to the millisecond, as pg's are.
 */
export function parseTimestamptz(text: string): Date {
  const n = text.length;
  const sign = text.charCodeAt(n - 3);
  if (
    n < 22 ||
    text.charCodeAt(4) !== 45 ||
    text.charCodeAt(10) !== 32 ||
    (sign !== 43 && sign !== 45)
  )
    return fallback(text);
  let ms = 0;
  if (text.charCodeAt(19) === 46) {
    for (let i = 20, scale = 100; i < n - 3 && scale >= 1; i++, scale /= 10)
      ms += (text.charCodeAt(i) - 48) * scale;
  } else if (n !== 22) return fallback(text);
  const year = digits2(text, 0) * 100 + digits2(text, 2);
  if (year < 100) return fallback(text);
  const offsetHours = digits2(text, n - 2) * (sign === 43 ? 1 : -1);
  return new Date(
    Date.UTC(
      year,
      digits2(text, 5) - 1,
      digits2(text, 8),
      digits2(text, 11) - offsetHours,
      digits2(text, 14),
      digits2(text, 17),
      ms,
    ),
  );
}

const fallback = pg.types.getTypeParser(TIMESTAMPTZ, 'text') as (text: string) => Date;

/** pg's type parsers, with {@link parseTimestamptz} for `timestamptz`: a client's `types`. */
export const typeParsers = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === TIMESTAMPTZ && format !== 'binary'
      ? parseTimestamptz
      : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
};
