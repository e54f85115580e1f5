import type { IncomingMessage } from 'node:http';
import { ServiceError } from '../errors.js';
import { hasBody, readBody } from './body.js';

/**
 * JSON request bodies, on every face: which Content-Type a body may be sent as, and reading
 * it. DESIGN §12's forgery rule is why there is a rule at all: a page on another site can make
 * a browser send a form, multipart or text/plain body without asking first, so only a body
 * declared as JSON is read, and the type is checked before a byte of it is.
 *
 * The rule (docs/limits.md): `application/json` or any `+json` type (RFC 6839, as
 * `application/merge-patch+json`), in any case, with any parameters; but a `charset` other
 * than UTF-8 is refused rather than read wrongly, since JSON between systems is UTF-8
 * (RFC 8259 §8.1) and the body is decoded as such.
 */

/** `application/json`, or `application/<anything>+json`. */
const JSON_ESSENCE = /^application\/(?:[\w!#$&^.-]+\+)?json$/i;

const NOT_JSON = 'The body must be JSON: send it with Content-Type: application/json.';

/**
 * Why a body sent as `contentType` is not read as JSON: a refusal with code
 * UNSUPPORTED_MEDIA_TYPE (415), or undefined when it may be. The one test of a JSON body's
 * type, for every face and for the GraphQL direct path's "is this plain?".
 */
export function jsonTypeRefusal(contentType: string | null | undefined): ServiceError | undefined {
  if (contentType === 'application/json') return undefined; // what nearly every client sends
  const [essence = '', ...params] = (contentType ?? '').split(';');
  if (!JSON_ESSENCE.test(essence.trim()))
    return new ServiceError('UNSUPPORTED_MEDIA_TYPE', NOT_JSON);
  for (const param of params) {
    const equals = param.indexOf('=');
    if (equals < 0 || param.slice(0, equals).trim().toLowerCase() !== 'charset') continue;
    const charset = param
      .slice(equals + 1)
      .trim()
      .replace(/^"(.*)"$/, '$1');
    if (charset.toLowerCase() !== 'utf-8') {
      return new ServiceError(
        'UNSUPPORTED_MEDIA_TYPE',
        `JSON bodies are read as UTF-8 only, not charset=${charset.slice(0, 40)}: send UTF-8 JSON.`,
      );
    }
  }
  return undefined;
}

/** A body read as JSON: its value, or `ok: false` when it does not parse (each face says so its way). */
export type JsonBody = { ok: true; value: unknown } | { ok: false };

/** JSON text as a JsonBody; never throws. */
export function parseJson(text: string): JsonBody {
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch {
    return { ok: false };
  }
}

export interface ReadJsonOptions {
  /**
   * What a request without a body (or with a blank one) reads as; its type is then not asked
   * for. Without it, such a request is refused or fails to parse like any other.
   */
  empty?: unknown;
}

/**
 * The request's body as JSON, read under the server's limit (`readBody`) once its type passes
 * `jsonTypeRefusal`.
 * @throws ServiceError UNSUPPORTED_MEDIA_TYPE before a byte is read; PayloadTooLarge past
 *   HTTP_MAX_BODY_BYTES (the last catch answers it 413); BAD_USER_INPUT when the body ends early
 */
export async function readJson(
  req: IncomingMessage,
  options: ReadJsonOptions = {},
): Promise<JsonBody> {
  const optional = 'empty' in options;
  if (!optional || hasBody(req)) {
    const refused = jsonTypeRefusal(req.headers['content-type']);
    if (refused) throw refused;
  }
  const text = (await readBody(req)).toString('utf8');
  if (optional && text.trim() === '') return { ok: true, value: options.empty };
  return parseJson(text);
}
