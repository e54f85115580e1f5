import { devSecret } from '../auth/dev-secret.js';
import { mintToken } from '../auth/mint.js';
import type { Config } from '../config/config.js';

export interface MintRequest {
  sub: string;
  scopes: readonly string[];
  ttl: string | number;
}

/**
 * Mints a bearer token the way the server configured by `config` verifies it: with
 * AUTH_JWT_SECRET, or in development with the secret kept in DATA_DIR.
 */
export function mintConfiguredToken(config: Config, request: MintRequest): Promise<string> {
  // With a key set configured the server refuses HS256, so a token minted here would not work.
  if (config.auth.jwksUrl)
    throw new Error('tokens come from the identity provider when AUTH_JWKS_URL is set');
  if (config.production && !config.auth.jwtSecret)
    throw new Error('NODE_ENV=production needs AUTH_JWT_SECRET to mint tokens');
  const secret = config.auth.jwtSecret ?? devSecret(config.dataDir);
  return mintToken(secret, {
    sub: request.sub,
    scopes: request.scopes,
    ttl: request.ttl,
    issuer: config.auth.issuer,
    audience: config.auth.audience,
  });
}
