import { ServiceError } from '../errors.js';

/**
 * The checks every face's input passes before it reaches the store: ids, keys and payloads.
 * Each throws ServiceError BAD_USER_INPUT naming what is wrong.
 */

/** Largest accepted `input` or answer, as JSON text. */
export const MAX_PAYLOAD_BYTES = 256 * 1024;
/** Deepest accepted nesting of arrays and objects in a payload (DESIGN §12). */
export const MAX_PAYLOAD_DEPTH = 64;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const IDEMPOTENCY_KEY = /^[\x20-\x7e]{1,255}$/;
const INPUT_KEY = /^[\x21-\x7e]{1,255}$/;
/** What jsonb refuses in a string: U+0000, or half of a surrogate pair (not valid Unicode). */
// biome-ignore lint/suspicious/noControlCharactersInRegex: U+0000 is exactly what this looks for.
const UNSTORABLE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** Whether `id` has the shape of a taskId (says nothing of whether such a task exists). */
export function isTaskId(id: string): boolean {
  return UUID.test(id);
}

export function checkId(id: string): string {
  if (typeof id !== 'string' || !isTaskId(id))
    throw new ServiceError('BAD_USER_INPUT', 'Malformed task id: expected a UUID.');
  return id.toLowerCase();
}

function refuse(what: string, why: string): never {
  throw new ServiceError('BAD_USER_INPUT', `${what} ${why}`);
}

function checkString(text: string, what: string): void {
  const found = UNSTORABLE.exec(text);
  if (!found) return;
  refuse(
    what,
    found[0] === '\u0000'
      ? 'contains the character U+0000, which cannot be stored.'
      : 'contains a lone surrogate (text that is not valid Unicode), which cannot be stored.',
  );
}

/**
 * A payload (task input, an answer) is plain JSON that Postgres's jsonb will take: no deeper
 * than MAX_PAYLOAD_DEPTH, no larger than MAX_PAYLOAD_BYTES as JSON text, no U+0000 or lone
 * surrogate in any string or key, only finite numbers. The walk keeps its own stack, so a
 * hostile depth is refused instead of overflowing the call stack; the size is measured only
 * once the depth is known to be safe for JSON.stringify.
 */
export function checkPayload(value: unknown, what: string): void {
  const stack: Array<[unknown, number]> = [[value ?? null, 0]];
  // Bounds the walk itself: a value with more parts than bytes allowed is too large anyway.
  let parts = 0;
  while (stack.length > 0) {
    const [current, depth] = stack.pop() as [unknown, number];
    if (++parts > MAX_PAYLOAD_BYTES) refuse(what, `is larger than ${MAX_PAYLOAD_BYTES} bytes.`);
    if (current === null || typeof current === 'boolean') continue;
    if (typeof current === 'string') {
      checkString(current, what);
      continue;
    }
    if (typeof current === 'number') {
      if (!Number.isFinite(current)) refuse(what, 'contains a number JSON cannot represent.');
      continue;
    }
    if (typeof current !== 'object') refuse(what, 'is not JSON.');
    if (depth >= MAX_PAYLOAD_DEPTH)
      refuse(what, `is nested deeper than ${MAX_PAYLOAD_DEPTH} levels.`);
    if (Array.isArray(current)) {
      for (const item of current) stack.push([item ?? null, depth + 1]);
      continue;
    }
    const prototype = Object.getPrototypeOf(current);
    if (prototype !== Object.prototype && prototype !== null) refuse(what, 'is not JSON.');
    for (const [key, item] of Object.entries(current)) {
      checkString(key, what);
      if (item !== undefined) stack.push([item, depth + 1]);
    }
  }
  if (Buffer.byteLength(JSON.stringify(value ?? null)) > MAX_PAYLOAD_BYTES) {
    refuse(what, `is larger than ${MAX_PAYLOAD_BYTES} bytes.`);
  }
}

export function checkIdempotencyKey(key: string | null): string | null {
  if (key !== null && (typeof key !== 'string' || !IDEMPOTENCY_KEY.test(key))) {
    throw new ServiceError(
      'BAD_USER_INPUT',
      'idempotencyKey must be 1 to 255 printable ASCII characters.',
    );
  }
  return key;
}

export function checkInputKey(key: string): string {
  if (typeof key !== 'string' || !INPUT_KEY.test(key))
    throw new ServiceError('BAD_USER_INPUT', 'Malformed input key.');
  return key;
}

/** Most labels one task may carry (DESIGN §15). */
export const MAX_LABELS = 16;
const LABEL_KEY = /^[a-z0-9][a-z0-9._/-]{0,62}$/;
const LABEL_VALUE = /^[\x20-\x7e]{1,255}$/;

/**
 * A task's labels (DESIGN §15): an object of at most MAX_LABELS string values, keys
 * `[a-z0-9][a-z0-9._/-]{0,62}`, values 1..255 printable characters. `what` names the field
 * in the message (`labels`, `filter.labels`).
 * @returns the labels, `{}` for null or undefined
 */
export function checkLabels(labels: unknown, what = 'labels'): Record<string, string> {
  if (labels === undefined || labels === null) return {};
  if (typeof labels !== 'object' || Array.isArray(labels))
    refuse(what, 'must be an object of string values.');
  const prototype = Object.getPrototypeOf(labels);
  if (prototype !== Object.prototype && prototype !== null)
    refuse(what, 'must be an object of string values.');
  const entries = Object.entries(labels);
  if (entries.length > MAX_LABELS) refuse(what, `may hold at most ${MAX_LABELS} labels.`);
  const checked: Record<string, string> = {};
  for (const [key, value] of entries) {
    if (!LABEL_KEY.test(key))
      refuse(
        what,
        `key ${JSON.stringify(key.slice(0, 80))} must match [a-z0-9][a-z0-9._/-]{0,62}.`,
      );
    if (typeof value !== 'string') refuse(`${what}.${key}`, 'must be a string.');
    if (!LABEL_VALUE.test(value))
      refuse(`${what}.${key}`, 'must be 1 to 255 printable ASCII characters.');
    checked[key] = value;
  }
  return checked;
}
