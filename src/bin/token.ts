import { parseArgs } from 'node:util';
import { devSecret } from '../auth/dev-secret.js';
import { mintToken } from '../auth/mint.js';
import { ConfigError, loadConfig } from '../config.js';

/**
 * `npm run token -- --sub alice [--scope "tasks:read tasks:write"] [--ttl 1h]`: mints a bearer
 * token with AUTH_JWT_SECRET, or with the development secret in DATA_DIR when none is set.
 */
try {
  const { values } = parseArgs({
    options: {
      sub: { type: 'string' },
      scope: { type: 'string', default: 'tasks:read tasks:write' },
      ttl: { type: 'string', default: '1h' },
    },
  });
  if (!values.sub) throw new Error('--sub is required');
  const config = loadConfig();
  // With a key set configured the server refuses HS256, so a token minted here would not work.
  if (config.auth.jwksUrl) throw new Error('tokens come from the identity provider when AUTH_JWKS_URL is set');
  if (config.production && !config.auth.jwtSecret) throw new Error('NODE_ENV=production needs AUTH_JWT_SECRET to mint tokens');
  const secret = config.auth.jwtSecret ?? devSecret(config.dataDir);
  const token = await mintToken(secret, {
    sub: values.sub,
    scopes: values.scope.split(/\s+/).filter(Boolean),
    ttl: values.ttl,
    issuer: config.auth.issuer,
    audience: config.auth.audience,
  });
  console.log(token);
} catch (err) {
  console.error(`taskhandle token: ${err instanceof ConfigError ? `configuration error: ${err.message}` : (err as Error).message}`);
  process.exit(2);
}
