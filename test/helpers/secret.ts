import { mintToken } from '../../src/auth/mint.js';

/** The HS256 secret every test server is started with (tokens from `mintToken(SECRET, …)`). */
export const SECRET = 'taskhandle-test-secret-0123456789abcdef';

/** A token of `sub` that may read and start tasks, for a server process a test starts. */
export function readWriteToken(sub = 'alice'): Promise<string> {
  return mintToken(SECRET, { sub, scopes: ['tasks:read', 'tasks:write'], ttl: '1h' });
}
