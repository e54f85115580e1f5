import { MAX_BATCH_SIZE } from '../../tasks/requests.js';
import { TASK_STATUSES } from '../../tasks/status.js';
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
import { SCHEDULE_SCHEMAS } from './schedule-schemas.js';
import { START_BODY, START_FIELDS } from './start-body.js';

/**
 * The named schemas of the REST face (`components.schemas` of openapi.json): what it takes and
 * what it answers. Answers are described with every member they may carry, and the test suite
 * holds every answer it receives to them, closed (test/helpers/openapi-check.ts); the
 * document itself leaves them open, since adding members is not a breaking change (DESIGN).
 */

const STEP_STATES = [
  'running',
  'completed',
  'failed',
  'sleeping',
  'waiting_signal',
  'waiting_child',
];

const TaskStatus = string('Lower-case here, as in every REST body (DESIGN §6).', {
  enum: [...TASK_STATUSES],
});

const TaskError = object({ code: string(), message: string() }, ['code', 'message']);

const InputRequest = object(
  {
    key: string('Answer with this key.'),
    message: string('The question.'),
    schema: { type: 'object', description: 'JSON Schema the answer must satisfy.' },
  },
  ['key', 'message'],
  'A question the task asks its owner.',
);

const Labels = {
  type: 'object',
  additionalProperties: string('1..255 printable ASCII characters.'),
  description:
    'At most 16 labels; keys match `[a-z0-9][a-z0-9._/-]{0,62}`. Set at start, never changed.',
};

/** DESIGN §17: at most `limit` first starts of a kind and key in any sliding `periodMs`. */
const RateLimit = object(
  {
    limit: integer('1..1000 first starts in any period.'),
    periodMs: integer('1..86 400 000: the sliding period.'),
  },
  ['limit', 'periodMs'],
  'A rate limit of first starts per key, across all processes.',
);

/** DESIGN §17: one task per burst of starts with the same key. */
const Debounce = object(
  {
    key: string('1..128 printable ASCII; the burst of this owner, kind and key.'),
    delayMs: integer('0..86 400 000: the task runs this long after the latest start of the burst.'),
    maxDelayMs: orNull(
      integer('delayMs..86 400 000: but no later than this long after its first start.'),
    ),
  },
  ['key', 'delayMs'],
  "Joins the open burst of this key: the same task's handle, its input replaced.",
);

const RetryPolicy = {
  ...object(
    {
      maxAttempts: orNull(integer('1..100; 1 = never retried.')),
      initialDelayMs: orNull(integer('First backoff, 0..86 400 000.')),
      factor: orNull({
        type: 'number',
        description: '1..10: each next delay = previous × factor.',
      }),
      maxDelayMs: orNull(integer('The cap, initialDelayMs..86 400 000.')),
    },
    [],
    "Overrides the kind's retry policy, field by field; omitted fields take the kind's.",
  ),
  additionalProperties: false,
};

const Webhook = object(
  {
    url: string('Where status changes are POSTed (Standard Webhooks).', { format: 'uri' }),
    secret: orNull(string('whsec_… signing secret; one is made when omitted.')),
  },
  ['url'],
);

const HANDLE_MEMBERS = {
  resultType: { const: 'task' },
  taskId: uuid(),
  status: ref('TaskStatus'),
  createdAt: dateTime(),
  lastUpdatedAt: dateTime(),
  ttlMs: integer(),
  pollIntervalMs: integer('How long to wait between polls; `Retry-After` in whole seconds.'),
  attempt: integer('Runs started so far (0 before the first).'),
  maxAttempts: integer(),
  runAt: dateTime('While the task waits for its time, its next attempt or a wake-up.'),
  lastError: ref('TaskError'),
  heldBecause: {
    type: 'string',
    enum: ['concurrency', 'rate_limit', 'time'],
    description:
      'While it waits to be claimed: why (its key at its limit, its rate limit, its time).',
  },
  labels: ref('Labels'),
  retryOf: uuid('The task this one runs again.'),
  scheduleKey: string('The schedule whose occurrence this task is.'),
  parentId: uuid('The task whose handler started this one.'),
};
const HANDLE_REQUIRED = [
  'resultType',
  'taskId',
  'status',
  'createdAt',
  'lastUpdatedAt',
  'ttlMs',
  'pollIntervalMs',
  'attempt',
  'maxAttempts',
  'labels',
];

const TaskHandle = object(HANDLE_MEMBERS, HANDLE_REQUIRED, 'A task handle (MCP Tasks).');

const TaskReport = object(
  {
    ...HANDLE_MEMBERS,
    statusMessage: string(),
    result: anyJson('Once completed; the owner only.'),
    error: ref('TaskError'),
    inputRequest: ref('InputRequest'),
    inputRequests: listOf(ref('InputRequest'), 'Every outstanding question; the owner only.'),
    steps: listOf(ref('TaskStep'), "The task's journal, on `GET /v1/jobs/{taskId}` only."),
  },
  HANDLE_REQUIRED,
  'The handle, with what the caller may see of the outcome.',
);

const TaskStep = object(
  {
    name: string(),
    state: string(undefined, { enum: STEP_STATES }),
    attempts: integer(),
    startedAt: dateTime(),
    endedAt: dateTime(),
    wakeAt: dateTime(),
    childId: uuid(),
    signalUrl: string('The owner only, while the step waits for its signal.', { format: 'uri' }),
    error: ref('TaskError'),
    result: anyJson('The owner only, once the step completed.'),
  },
  ['name', 'state', 'attempts', 'startedAt'],
  'One entry of a task’s journal (DESIGN §16).',
);

const TaskList = object(
  {
    tasks: listOf(ref('TaskReport')),
    nextCursor: orNull(string('Pass as `cursor` for the next page; null on the last.')),
  },
  ['tasks', 'nextCursor'],
);

/** The body of `POST /v1/jobs/cancel`: the filter itself (DESIGN §15). */
const TaskFilter = {
  ...object(
    {
      status: orNull({
        anyOf: [string(), listOf(string())],
        description: 'Statuses, lower-case: working, input_required, completed, cancelled, failed.',
      }),
      kind: orNull({ anyOf: [string(), listOf(string())] }),
      labels: orNull(ref('Labels')),
      createdAfter: orNull(dateTime('Inclusive.')),
      createdBefore: orNull(dateTime('Exclusive.')),
      owner: orNull(string('Admins: whose tasks.')),
      parentId: orNull(string('Children of this task.')),
    },
    [],
    'Every condition given must match. An empty filter is refused: name the statuses.',
  ),
  additionalProperties: false,
};

const Problem = object(
  {
    type: string(undefined, { const: 'about:blank' }),
    title: string(),
    status: integer(),
    code: string('One of the error codes of the contract.'),
    detail: string('What is wrong and how to fix it.'),
    index: integer('The 0-based index of the refused entry of a batch.'),
  },
  ['type', 'title', 'status', 'code', 'detail'],
  'RFC 9457 problem details, with the error code.',
);

/** Every named schema, in the order the document lists them. */
export const COMPONENT_SCHEMAS: Record<string, JsonSchema> = {
  TaskStatus,
  TaskError,
  InputRequest,
  Labels,
  Debounce,
  RateLimit,
  RetryPolicy,
  Webhook,
  StartTask: START_BODY,
  StartBatchEntry: object(
    {
      ...START_FIELDS,
      idempotencyKey: orNull(string('As the Idempotency-Key header of a single start.')),
    },
    ['kind'],
  ),
  StartBatch: object(
    {
      jobs: listOf(ref('StartBatchEntry'), `1..${MAX_BATCH_SIZE} tasks, stored all or none.`),
    },
    ['jobs'],
  ),
  Batch: object({ jobs: listOf(ref('TaskHandle')) }, ['jobs']),
  TaskHandle,
  TaskReport,
  TaskStep,
  TaskList,
  TaskFilter,
  CancelResult: object(
    {
      matched: integer('Tasks the filter matched, terminal ones included.'),
      cancelled: integer('Those this call cancelled.'),
    },
    ['matched', 'cancelled'],
  ),
  AnswerInput: object({ key: string('The question’s key.'), value: anyJson('The answer.') }, [
    'key',
    'value',
  ]),
  RetryTask: object({
    fromStep: orNull(string('Re-run from this step: the journal is copied up to it.')),
  }),
  ...SCHEDULE_SCHEMAS,
  SignalReceipt: object({ received: { const: true }, first: { type: 'boolean' } }, [
    'received',
    'first',
  ]),
  Problem,
};
