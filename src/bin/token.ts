import { parseArgs } from 'node:util';
import { mintConfiguredToken } from '../cli/token.js';
import { ConfigError, loadConfig } from '../config/config.js';

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
  const token = await mintConfiguredToken(loadConfig(), {
    sub: values.sub,
    scopes: values.scope.split(/\s+/).filter(Boolean),
    ttl: values.ttl,
  });
  console.log(token);
} catch (err) {
  console.error(
    `taskhandle token: ${err instanceof ConfigError ? `configuration error: ${err.message}` : (err as Error).message}`,
  );
  process.exit(2);
}
