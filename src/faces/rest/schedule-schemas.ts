import {
  anyJson,
  dateTime,
  integer,
  type JsonSchema,
  listOf,
  object,
  orNull,
  ref,
  string,
  uuid,
} from './json-schema.js';

/** The named schemas of `/v1/schedules` (DESIGN §17), beside the tasks' (schemas.ts). */

const Policy = (values: readonly string[], description: string) =>
  string(`${description} Upper case is read too.`, {
    enum: [...values, ...values.map((v) => v.toUpperCase())],
  });

const MISSED = ['skip', 'once', 'all'];
const OVERLAP = ['allow', 'skip'];

/** What a schedule's occurrences start their tasks with (DESIGN §14), as saved and as shown. */
const SCHEDULE_WORK = {
  priority: orNull(integer()),
  labels: orNull(ref('Labels')),
  retry: orNull(ref('RetryPolicy')),
  ttlMs: orNull(integer()),
  concurrencyKey: orNull(string()),
};

const ScheduleInput = object(
  {
    key: string('Optional; when given, the key of the path.'),
    cron: string('5 fields (minute precision), or @hourly, @daily, @weekly, @monthly.'),
    timezone: orNull(string('IANA name; default UTC.')),
    kind: string(),
    input: anyJson('Checked against the kind’s schema when saved.'),
    missed: orNull(Policy(MISSED, 'Occurrences missed while no process ran; default skip.')),
    overlap: orNull(Policy(OVERLAP, 'skip: no new task while the last one is active.')),
    paused: orNull({ type: 'boolean', description: 'Default: as it was (false for a new one).' }),
    ...SCHEDULE_WORK,
  },
  ['cron', 'kind'],
  'A schedule to save (DESIGN §17); omitted fields take their defaults.',
);

const Schedule = object(
  {
    key: string(),
    cron: string(),
    timezone: string(),
    kind: string(),
    input: anyJson('The owner only.'),
    missed: string(undefined, { enum: MISSED }),
    overlap: string(undefined, { enum: OVERLAP }),
    paused: { type: 'boolean' },
    ...SCHEDULE_WORK,
    nextRunAt: orNull(dateTime('Null while paused.')),
    lastRunAt: orNull(dateTime()),
    lastTaskId: orNull(uuid()),
    createdAt: dateTime(),
    updatedAt: dateTime(),
    owner: string('Admins only.'),
  },
  [
    'key',
    'cron',
    'timezone',
    'kind',
    'missed',
    'overlap',
    'paused',
    ...Object.keys(SCHEDULE_WORK),
    'nextRunAt',
    'lastRunAt',
    'lastTaskId',
    'createdAt',
    'updatedAt',
  ],
);

export const SCHEDULE_SCHEMAS: Record<string, JsonSchema> = {
  ScheduleInput,
  Schedule,
  ScheduleList: object(
    {
      schedules: listOf(ref('Schedule')),
      nextCursor: orNull(string('Pass as `cursor` for the next page; null on the last.')),
    },
    ['schedules', 'nextCursor'],
  ),
};
