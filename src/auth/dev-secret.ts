import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The development secret: created once in DATA_DIR (mode 0600) and reused, so tokens printed
 * by one start keep working after a restart. Never used in production.
 */
export function devSecret(dataDir: string): string {
  if (dataDir.includes('://')) return randomBytes(32).toString('base64url');
  const file = join(dataDir, 'dev-secret');
  try {
    return readFileSync(file, 'utf8').trim();
  } catch {
    mkdirSync(dataDir, { recursive: true });
    const secret = randomBytes(32).toString('base64url');
    writeFileSync(file, `${secret}\n`, { mode: 0o600 });
    return secret;
  }
}
