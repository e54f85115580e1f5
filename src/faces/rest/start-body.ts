import type { StartRequest } from '../../tasks/requests.js';
import {
  anyJson,
  dateTime,
  integer,
  type JsonSchema,
  object,
  orNull,
  ref,
  string,
} from './json-schema.js';

/**
 * The body of a start (`POST /v1/jobs`, each entry of `POST /v1/jobs/batch`), in one place: a
 * field is one line below, its schema validated by the router and documented in openapi.json,
 * and it reaches the domain's StartRequest under the same name. Ranges are the domain's to check.
 */
export const START_FIELDS = {
  kind: string('A registered task kind.'),
  input: anyJson("The kind's input, checked against the kind's input schema. Default `{}`."),
  ttlMs: orNull(
    integer('Retention from creation, in ms; clamped to TASK_MIN_TTL_MS..TASK_MAX_TTL_MS.'),
  ),
  webhook: orNull(ref('Webhook')),
  // DESIGN §14.
  runAt: orNull(dateTime('Not claimed before this instant; at most the task’s expiry.')),
  delayMs: orNull(integer('Or: not claimed before now + delayMs (0..TASK_MAX_TTL_MS).')),
  priority: orNull(integer('-100..100, default the kind’s (0); higher is claimed first.')),
  concurrencyKey: orNull(string('1..255 printable ASCII; groups tasks for a concurrency limit.')),
  concurrencyLimit: orNull(integer('1..1000 tasks of this kind and key running at once.')),
  // DESIGN §17.
  rateLimitKey: orNull(
    string('1..255 printable ASCII; default the owner: whose first starts a rate limit counts.'),
  ),
  rateLimit: orNull(ref('RateLimit')),
  retry: orNull(ref('RetryPolicy')),
  // DESIGN §15.
  labels: orNull(ref('Labels')),
  // DESIGN §17.
  debounce: orNull(ref('Debounce')),
} satisfies Record<string, JsonSchema>;

/** The body's fields that reach the domain other than as they are sent. */
const READ: { [F in keyof typeof START_FIELDS]?: (value: unknown) => unknown } = {
  // The schema checked the text; whether it is a date is the domain's to say.
  runAt: (value) => (typeof value === 'string' ? new Date(value) : null),
  // Only what a REST client may set: the A2A face's own members are not taken from here.
  webhook: (value) => {
    if (value === null || typeof value !== 'object') return null;
    const { url, secret } = value as { url: string; secret?: string | null };
    return { url, secret: secret ?? null };
  },
};

/** The start body's schema (`components.schemas.StartTask`). */
export const START_BODY = object(START_FIELDS, ['kind'], 'A task to start.');

/**
 * A start request from a body valid against START_BODY; an absent field reads as null.
 * @param idempotencyKey the `Idempotency-Key` header, or a batch entry's `idempotencyKey`
 */
export function startRequestOf(
  body: Record<string, unknown>,
  idempotencyKey: string | null,
): StartRequest {
  const request: Record<string, unknown> = { idempotencyKey };
  for (const name of Object.keys(START_FIELDS) as Array<keyof typeof START_FIELDS>) {
    const read = READ[name];
    request[name] = read ? read(body[name]) : (body[name] ?? null);
  }
  return request as unknown as StartRequest;
}
