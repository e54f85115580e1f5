import { ServiceError } from '../errors.js';
import type { Principal } from './principal.js';
import { bearerToken, type TokenVerifier } from './tokens.js';

export interface Authentication {
  principal: Principal | null;
  /** Set when a token was sent and refused. */
  error: ServiceError | null;
}

/**
 * Reads an Authorization value (`Bearer <jwt>`). No value → anonymous; a bad one → an
 * UNAUTHENTICATED error that the faces report. Never throws for a client's mistake.
 */
export async function authenticate(
  verifier: TokenVerifier,
  header: string | null | undefined,
): Promise<Authentication> {
  try {
    const token = bearerToken(header);
    if (!token) return { principal: null, error: null };
    return { principal: await verifier.verify(token), error: null };
  } catch (err) {
    if (err instanceof ServiceError) return { principal: null, error: err };
    throw err;
  }
}
