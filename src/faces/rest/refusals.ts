import type { Answer, RestRoute } from './route.js';

/**
 * The refusals a route may answer, as problem documents (RFC 9457): its own (`refusals`) and
 * those every route shares, which the router and the server make: the token, the body, the
 * limits and faults of DESIGN §12. The document lists them per operation.
 */
export interface RefusalAnswer extends Answer {
  codes: string[];
}

type Shared = Record<number, Pick<RefusalAnswer, 'codes' | 'headers' | 'optionalHeaders'>>;

/** Every route: a body over HTTP_MAX_BODY_BYTES, a Host not in ALLOWED_HOSTS, an error masked. */
const EVERY: Shared = {
  413: { codes: ['PAYLOAD_TOO_LARGE'] },
  421: { codes: ['MISDIRECTED_REQUEST'] },
  500: { codes: ['INTERNAL_SERVER_ERROR'] },
};
/** A route that uses the task service: its rate limit and its database. */
const SERVICE: Shared = {
  429: { codes: ['RATE_LIMITED'], headers: ['Retry-After'] },
  503: { codes: ['SERVICE_UNAVAILABLE'], headers: ['Retry-After'] },
};
/** A route that needs a bearer token. */
const TOKEN: Shared = {
  401: { codes: ['UNAUTHENTICATED'], headers: ['WWW-Authenticate'] },
  403: { codes: ['FORBIDDEN'], optionalHeaders: ['WWW-Authenticate'] },
};
/** A route that reads a JSON body. */
const BODY: Shared = {
  400: { codes: ['BAD_USER_INPUT'] },
  415: { codes: ['UNSUPPORTED_MEDIA_TYPE'] },
  422: { codes: ['BAD_USER_INPUT'] },
};

const DESCRIPTION: Record<string, string> = {
  400: 'The body is not JSON.',
  401: 'No valid bearer token.',
  403: 'The token lacks the scope the operation needs.',
  404: 'Unknown, expired or not the caller’s, alike.',
  409: 'Not in a state that allows it.',
  413: 'The body is over HTTP_MAX_BODY_BYTES; the connection is closed.',
  415: 'The body is not sent as application/json (UTF-8).',
  421: 'The Host is not one of ALLOWED_HOSTS.',
  422: 'A bad request, named in `detail`.',
  429: 'Over the caller’s rate limit: retry after `Retry-After` seconds.',
  500: 'An unexpected error, masked (it is logged).',
  503: 'The database is unreachable: retry after `Retry-After` seconds.',
};

/** Status → the refusal: its codes, headers and description, in status order. */
export function refusalsOf(route: RestRoute): Record<number, RefusalAnswer> {
  const all: Record<number, RefusalAnswer> = {};
  const add = (shared: Shared) => {
    for (const [status, refusal] of Object.entries(shared)) {
      const known = all[Number(status)];
      const codes = [...new Set([...(known?.codes ?? []), ...refusal.codes])];
      all[Number(status)] = {
        description: DESCRIPTION[status] ?? 'Refused.',
        ...known,
        ...(refusal.headers ? { headers: refusal.headers } : {}),
        ...(refusal.optionalHeaders ? { optionalHeaders: refusal.optionalHeaders } : {}),
        codes,
      };
    }
  };
  add(EVERY);
  if (!route.offline) add(SERVICE);
  if (route.operation !== null) add(TOKEN);
  if (route.body) add(BODY);
  add(
    Object.fromEntries(
      Object.entries(route.refusals ?? {}).map(([status, codes]) => [
        status,
        { codes: [...codes] },
      ]),
    ),
  );
  return Object.fromEntries(Object.entries(all).sort(([a], [b]) => Number(a) - Number(b)));
}
