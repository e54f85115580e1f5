import type { IncomingMessage } from 'node:http';
import { authenticate } from '../auth/authenticate.js';
import type { Principal } from '../auth/principal.js';
import type { TokenVerifier } from '../auth/tokens.js';
import { ServiceError } from '../errors.js';

/** A refused bearer token; `subject` is the token's principal when it was valid but lacked the scope. */
export class BearerRefusal extends ServiceError {
  constructor(
    code: 'UNAUTHENTICATED' | 'FORBIDDEN',
    message: string,
    details: Record<string, unknown>,
    readonly subject: string | null = null,
  ) {
    super(code, message, details);
  }
}

/**
 * The caller of a plain-HTTP face, if its bearer token is valid and has `scope` (null: any
 * valid token). Refusals are BearerRefusals, which `bearerChallenge` turns into headers.
 */
export async function requireBearer(
  verifier: TokenVerifier,
  req: IncomingMessage,
  scope: string | null,
): Promise<Principal> {
  const auth = await authenticate(verifier, req.headers.authorization);
  if (auth.error) {
    throw new BearerRefusal('UNAUTHENTICATED', auth.error.message, { tokenSent: true });
  }
  if (!auth.principal) {
    throw new BearerRefusal(
      'UNAUTHENTICATED',
      'Authentication required: send "Authorization: Bearer <token>".',
      {},
    );
  }
  if (scope !== null && !auth.principal.scopes.has(scope)) {
    const message = `The token lacks the ${scope} scope.`;
    throw new BearerRefusal('FORBIDDEN', message, { scope }, auth.principal.sub);
  }
  return auth.principal;
}

/**
 * RFC 6750 §3: the `WWW-Authenticate` header for a refusal by `requireBearer` — bare without
 * credentials, `invalid_token` for a refused token (never saying why), `insufficient_scope`
 * naming the scope. `params` (RFC 9728's `resource_metadata`, say) go on every challenge.
 */
export function bearerChallenge(
  err: ServiceError,
  params: Record<string, string> = {},
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
