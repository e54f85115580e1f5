import { createRemoteJWKSet, errors, type JWTPayload, type JWTVerifyGetKey, jwtVerify } from 'jose';
import { ServiceError } from '../errors.js';
import type { Principal } from './principal.js';

export interface VerifierOptions {
  /** HS256 shared secret. */
  secret?: string | undefined;
  /** An identity provider's key set (RS256/ES256); HS256 is then refused. */
  jwksUrl?: string | undefined;
  issuer?: string | undefined;
  audience?: string | undefined;
  /** Scopes of a token that carries neither `scope` nor `scp`. */
  defaultScopes: readonly string[];
  /** Clock skew tolerated on `exp`/`nbf`/`iat`, in seconds. @default 5 */
  clockToleranceSec?: number;
  /** Verified tokens remembered at once; 0 verifies every time. @default 10_000 */
  cacheSize?: number;
}

/** Longest a token without `exp` stays cached. */
const NO_EXP_CACHE_MS = 60_000;
/**
 * A `kid` missing from the cached key set refetches it at most this often: a key the identity
 * provider rotates in is accepted within seconds, and tokens with made-up `kid`s cost it at
 * most one request per interval. (The set is refetched every 10 minutes regardless.)
 */
const JWKS_COOLDOWN_MS = 5_000;

const unauthenticated = (message: string) => new ServiceError('UNAUTHENTICATED', message);

/**
 * Verifies bearer tokens (jose) and remembers verified ones until they expire, so a client
 * that sends the same token on every request pays for the signature check once.
 */
export class TokenVerifier {
  private readonly cache = new Map<string, { principal: Principal; until: number }>();
  private readonly key: Uint8Array | JWTVerifyGetKey;
  private readonly algorithms: string[];

  constructor(private readonly options: VerifierOptions) {
    if (options.jwksUrl) {
      this.key = createRemoteJWKSet(new URL(options.jwksUrl), {
        cooldownDuration: JWKS_COOLDOWN_MS,
      });
      this.algorithms = ['RS256', 'ES256'];
    } else if (options.secret) {
      this.key = new TextEncoder().encode(options.secret);
      this.algorithms = ['HS256'];
    } else {
      throw new Error('TokenVerifier needs a secret or a JWKS URL');
    }
  }

  /** @throws ServiceError UNAUTHENTICATED for a missing, malformed, forged or expired token */
  async verify(token: string): Promise<Principal> {
    const now = Date.now();
    const cached = this.cache.get(token);
    if (cached) {
      if (cached.until > now) return cached.principal;
      this.cache.delete(token);
    }
    const principal = await this.check(token);
    const size = this.options.cacheSize ?? 10_000;
    if (size === 0) return principal;
    const until = principal.expiresAt ?? now + NO_EXP_CACHE_MS;
    if (this.cache.size >= size) {
      // Drop the oldest entry; a Map iterates in insertion order.
      const oldest = this.cache.keys().next().value;
      if (oldest !== undefined) this.cache.delete(oldest);
    }
    this.cache.set(token, { principal, until });
    return principal;
  }

  /**
   * The subject of the bearer token in `header` if this verifier has already verified it and
   * it has not expired; never verifies (request logs call it after the request).
   */
  subjectOf(header: string | undefined): string | undefined {
    const token = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '')?.[1];
    const cached = token === undefined ? undefined : this.cache.get(token);
    return cached && cached.until > Date.now() ? cached.principal.sub : undefined;
  }

  /** Signature and claims, checked by jose; a new principal every time. */
  private async check(token: string): Promise<Principal> {
    let payload: JWTPayload;
    try {
      const key = this.key;
      const options = {
        algorithms: this.algorithms,
        clockTolerance: this.options.clockToleranceSec ?? 5,
        ...(this.options.issuer ? { issuer: this.options.issuer } : {}),
        ...(this.options.audience ? { audience: this.options.audience } : {}),
      };
      ({ payload } =
        typeof key === 'function'
          ? await jwtVerify(token, key, options)
          : await jwtVerify(token, key, options));
    } catch (err) {
      if (err instanceof errors.JWTExpired) throw unauthenticated('The token has expired.');
      if (err instanceof errors.JOSEError) throw unauthenticated(`Invalid token (${err.code}).`);
      throw err;
    }
    if (typeof payload.sub !== 'string' || payload.sub === '')
      throw unauthenticated('The token has no subject.');
    return {
      sub: payload.sub,
      scopes: new Set(scopesOf(payload) ?? this.options.defaultScopes),
      expiresAt:
        typeof payload.exp === 'number'
          ? payload.exp * 1000 + (this.options.clockToleranceSec ?? 5) * 1000
          : undefined,
    };
  }
}

/**
 * `scope` (space-separated, RFC 8693) or `scp` (an array, or a string as some providers send
 * it). `undefined` only when neither claim is present: a claim of another shape grants nothing
 * rather than the default scopes.
 */
function scopesOf(payload: JWTPayload): string[] | undefined {
  const claim = payload.scope !== undefined ? payload.scope : payload.scp;
  if (claim === undefined) return undefined;
  if (typeof claim === 'string') return claim.split(/\s+/).filter(Boolean);
  if (Array.isArray(claim)) return claim.filter((s): s is string => typeof s === 'string');
  return [];
}

/** The token of an `Authorization: Bearer …` value; `undefined` when absent, an error when malformed. */
export function bearerToken(header: string | null | undefined): string | undefined {
  if (header == null || header === '') return undefined;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (!match?.[1]) throw unauthenticated('Expected "Authorization: Bearer <token>".');
  return match[1];
}
