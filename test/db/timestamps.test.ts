import fc from 'fast-check';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { parseTimestamptz } from '../../src/db/timestamps.js';
import { backend, freshDatabaseAndClient } from '../helpers/db.js';

/** pg's own parser: what `parseTimestamptz` must agree with on every text. */
const pgParse = pg.types.getTypeParser(1184, 'text') as (text: string) => Date;
const same = (text: string) =>
  expect(parseTimestamptz(text).getTime(), text).toEqual(pgParse(text).getTime());

describe('reading timestamptz', () => {
  it('reads what pg reads, for any instant, fraction and whole-hour offset', () => {
    const pad = (n: number, width = 2) => String(n).padStart(width, '0');
    fc.assert(
      fc.property(
        fc.integer({ min: 100, max: 9999 }),
        fc.integer({ min: 1, max: 12 }),
        fc.integer({ min: 1, max: 28 }),
        fc.integer({ min: 0, max: 23 }),
        fc.integer({ min: 0, max: 59 }),
        fc.integer({ min: 0, max: 59 }),
        fc.option(fc.stringMatching(/^[0-9]{1,6}$/), { nil: undefined }),
        fc.integer({ min: -15, max: 15 }),
        (year, month, day, hour, minute, second, fraction, offset) => {
          const sign = offset < 0 ? '-' : '+';
          same(
            `${pad(year, 4)}-${pad(month)}-${pad(day)} ${pad(hour)}:${pad(minute)}:${pad(second)}${
              fraction === undefined ? '' : `.${fraction}`
            }${sign}${pad(Math.abs(offset))}`,
          );
        },
      ),
      { numRuns: 2_000 },
    );
  });

  it('leaves what it does not know to pg: minute offsets, BC, infinity, early years', () => {
    for (const text of [
      '2026-12-05 03:45:15.987654+05:30',
      '2026-12-05 03:45:15-09:30',
      '0044-03-15 12:00:00+00 BC',
      '0099-01-01 00:00:00+00',
      'infinity',
      '-infinity',
    ])
      expect(String(parseTimestamptz(text)), text).toEqual(String(pgParse(text)));
  });

  it.skipIf(backend === 'pglite')('reads what Postgres sends, in any time zone', async () => {
    const { database, client } = await freshDatabaseAndClient();
    try {
      for (const zone of ['UTC', 'America/New_York', 'Asia/Kolkata', 'Pacific/Chatham']) {
        await client.query(`set time zone '${zone}'`);
        const { rows } = await client.query<{ t: string; epoch: string }>({
          text: `select t::text as t, (extract(epoch from t) * 1000)::bigint::text as epoch
                 from (values (now()), (date_trunc('milliseconds', now())),
                              ('2026-03-29 01:30:00.5+00'::timestamptz),
                              ('1999-12-31 23:59:59.999999+00'::timestamptz)) v(t)`,
        });
        for (const { t, epoch } of rows) {
          same(t);
          expect(
            Math.abs(parseTimestamptz(t).getTime() - Number(epoch)),
            `${zone} ${t}`,
          ).toBeLessThanOrEqual(1);
        }
      }
    } finally {
      await client.end();
      await database.drop();
    }
  });
});
