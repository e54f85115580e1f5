import type { IncomingMessage, ServerResponse } from 'node:http';
import { authenticate } from '../auth/authenticate.js';
import type { Principal } from '../auth/principal.js';
import type { TokenVerifier } from '../auth/tokens.js';
import { type ErrorCode, ServiceError } from '../errors.js';
import { sendProblem } from './problem.js';

/**
 * How the plain-HTTP faces (REST, MCP, A2A) say no: one status for each code of DESIGN §3,
 * the bearer challenge and `Retry-After` for the limits. (Which bodies are JSON: json-body.ts.)
 */

/** The HTTP status of each contract code. */
const STATUS_OF: Record<ErrorCode, number> = {
  UNAUTHENTICATED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  TASK_TERMINAL: 409,
  NOT_AWAITING_INPUT: 409,
  TASK_NOT_RETRYABLE: 409,
  SIGNAL_ALREADY_SENT: 409,
  STEP_NAME_REUSED: 409,
  CHILD_FAILED: 409,
  IDEMPOTENCY_KEY_REUSED: 422,
  BAD_USER_INPUT: 422,
  RATE_LIMITED: 429,
  SERVICE_UNAVAILABLE: 503,
  TOO_MANY_SUBSCRIPTIONS: 429,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
};

/** A refusal whose HTTP status is not its code's usual one (400 for a body that is no JSON). */
export class HttpRefusal extends ServiceError {
  constructor(
    readonly status: number,
    code: ErrorCode,
    message: string,
  ) {
    super(code, message);
  }
}

/** Where a refusal is audited: the task service's gate (`TaskService.gate`). */
export interface RefusalAudit {
  refused(
    principal: string | null,
    operation: string,
    taskId: string | null,
    outcome: 'UNAUTHENTICATED',
  ): void;
}

/** What a refused request was asking for, as the audit trail names it. */
export interface AuditedAsk {
  audit: RefusalAudit;
  /** The task operation, or the face (`mcp`, `a2a`) when its method is not read yet. */
  operation: string;
  taskId?: string | null;
}

/**
 * The caller of a plain-HTTP face, if its bearer token is valid; a request without one is
 * refused and audited, like every refused task operation (docs/auth.md). The scope an
 * operation needs is the task service's to check (`TaskService.gate.authorize`).
 * @throws ServiceError UNAUTHENTICATED, `details.tokenSent` when a token was refused
 */
export async function requireBearer(
  verifier: TokenVerifier,
  req: IncomingMessage,
  ask: AuditedAsk,
): Promise<Principal> {
  const auth = await authenticate(verifier, req.headers.authorization);
  if (auth.principal) return auth.principal;
  ask.audit.refused(null, ask.operation, ask.taskId ?? null, 'UNAUTHENTICATED');
  if (auth.error) {
    throw new ServiceError('UNAUTHENTICATED', auth.error.message, { tokenSent: true });
  }
  throw new ServiceError(
    'UNAUTHENTICATED',
    'Authentication required: send "Authorization: Bearer <token>".',
  );
}

/**
 * RFC 6750 §3: the `WWW-Authenticate` header for a refused token — bare without credentials,
 * `invalid_token` for a refused token (never saying why), `insufficient_scope` naming the
 * scope. `params` (RFC 9728's `resource_metadata`, say) go on every challenge.
 */
function bearerChallenge(
  err: ServiceError,
  params: Record<string, string>,
): Record<string, string> {
  const parts = Object.entries(params).map(([name, value]) => `${name}="${value}"`);
  if (err.code === 'FORBIDDEN' && typeof err.details?.scope === 'string') {
    parts.push('error="insufficient_scope"', `scope="${err.details.scope}"`);
  } else if (err.code === 'UNAUTHENTICATED' && err.details?.tokenSent) {
    parts.push('error="invalid_token"');
  } else if (err.code !== 'UNAUTHENTICATED') {
    return {};
  }
  return { 'www-authenticate': parts.length ? `Bearer ${parts.join(', ')}` : 'Bearer' };
}

/**
 * `Retry-After` for a refusal that passes (DESIGN §12): the error's own `retryAfterMs` in
 * whole seconds, at least 1; else 1 s for RATE_LIMITED and SERVICE_UNAVAILABLE.
 */
function retryAfter(err: ServiceError): Record<string, string> {
  const ms = err.details?.retryAfterMs;
  if (typeof ms === 'number' && ms > 0)
    return { 'retry-after': String(Math.max(1, Math.ceil(ms / 1000))) };
  if (err.code === 'RATE_LIMITED' || err.code === 'SERVICE_UNAVAILABLE')
    return { 'retry-after': '1' };
  return {};
}

/**
 * A coded refusal as a problem document: its status, the bearer challenge (with `challenge`
 * params on a 401), `Retry-After` where one applies, and `index` for a refused batch entry.
 */
export function sendRefusal(
  res: ServerResponse,
  err: ServiceError,
  challenge: Record<string, string> = {},
): void {
  const status = err instanceof HttpRefusal ? err.status : (STATUS_OF[err.code] ?? 400);
  // A refusal of one entry of a batch names it, as GraphQL's extensions.index does (§15).
  const index = err.details?.index;
  sendProblem(
    res,
    status,
    err.code,
    err.message,
    {
      ...bearerChallenge(err, err.code === 'UNAUTHENTICATED' ? challenge : {}),
      ...retryAfter(err),
    },
    typeof index === 'number' ? { index } : {},
  );
}

/** 405 with the `Allow` header: the path exists, the method does not. */
export function sendMethodNotAllowed(res: ServerResponse, allow: string, detail: string): void {
  sendProblem(res, 405, 'METHOD_NOT_ALLOWED', detail, { allow });
}
