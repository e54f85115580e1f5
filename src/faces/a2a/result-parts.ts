import { Part } from '@a2a-js/sdk';

/** The result key whose value is the result artifact's parts, in A2A's JSON (docs/a2a.md). */
export const PARTS_KEY = 'a2a/parts';
/** The result key that, set to `"message"`, makes a waiting SendMessage answer a Message. */
export const REPLY_KEY = 'a2a/reply';

const isRecord = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

/**
 * The parts a result asks to be shown as over A2A: `result["a2a/parts"]`, a non-empty array of
 * A2A 1.0 parts in JSON (`{ text }`, `{ data }`, `{ raw }` in base64, `{ url }`, each with
 * `filename`, `mediaType` and `metadata` optional). Undefined when the result holds none, or
 * when any of them is not a part: the result is then one data part, as for any other result,
 * so a kind's mistake never hides its result.
 */
export function partsOfResult(result: unknown): Part[] | undefined {
  if (!isRecord(result)) return undefined;
  const listed = result[PARTS_KEY];
  if (!Array.isArray(listed) || listed.length === 0) return undefined;
  const parts: Part[] = [];
  for (const item of listed) {
    if (!isRecord(item)) return undefined;
    const part = Part.fromJSON(item);
    if (!part.content) return undefined;
    parts.push(part);
  }
  return parts;
}

/** Whether a result asks a waiting SendMessage to answer with a Message of its parts. */
export const repliesWithMessage = (result: unknown): boolean =>
  isRecord(result) && result[REPLY_KEY] === 'message' && partsOfResult(result) !== undefined;
