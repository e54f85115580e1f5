/**
 * Readers for environment variables: each parses one variable or throws a ConfigError naming
 * it, so that `loadConfig` (src/config/config.ts) reads as a list of variables and their rules.
 */

export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    message: string,
  ) {
    super(`${variable}: ${message}`);
    this.name = 'ConfigError';
  }
}

/** A day in milliseconds, the longest most durations may be. */
export const DAY = 86_400_000;

export type Env = Record<string, string | undefined>;

export function int(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw.trim()))
    throw new ConfigError(name, `expected a whole number, got ${JSON.stringify(raw)}`);
  const value = Number(raw.trim());
  if (value < min || value > max)
    throw new ConfigError(name, `must be between ${min} and ${max}, got ${value}`);
  return value;
}

/** A non-negative decimal such as 0.5 or 20. */
export function decimal(env: Env, name: string, fallback: number, max: number): number {
  const raw = env[name]?.trim();
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+(\.\d+)?$/.test(raw))
    throw new ConfigError(name, `expected a number such as 0.5 or 20, got ${JSON.stringify(raw)}`);
  const value = Number(raw);
  if (value > max) throw new ConfigError(name, `must be at most ${max}, got ${value}`);
  return value;
}

export function str(env: Env, name: string): string | undefined {
  const raw = env[name]?.trim();
  return raw === '' ? undefined : raw;
}

export function url(env: Env, name: string, protocols: readonly string[]): string | undefined {
  const raw = str(env, name);
  if (raw === undefined) return undefined;
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    throw new ConfigError(name, `not a URL: ${JSON.stringify(raw)}`);
  }
  if (!protocols.includes(parsed.protocol)) {
    throw new ConfigError(name, `expected ${protocols.join(' or ')} URL, got ${parsed.protocol}`);
  }
  return raw;
}

/** A bearer token's characters (RFC 6750 b64token), at least 16 of them. */
export function token(env: Env, name: string): string | undefined {
  const raw = str(env, name);
  if (raw === undefined) return undefined;
  if (!/^[A-Za-z0-9\-._~+/]+=*$/.test(raw))
    throw new ConfigError(name, 'may hold only letters, digits and -._~+/ (a bearer token)');
  if (raw.length < 16) throw new ConfigError(name, 'must be at least 16 characters');
  return raw;
}

export function bool(env: Env, name: string): boolean | undefined {
  const raw = str(env, name)?.toLowerCase();
  if (raw === undefined) return undefined;
  if (['1', 'true', 'yes', 'on'].includes(raw)) return true;
  if (['0', 'false', 'no', 'off'].includes(raw)) return false;
  throw new ConfigError(name, `expected true or false, got ${JSON.stringify(raw)}`);
}

/** `CORS_ORIGINS`: a list of exact origins, or `*`; unset is none in production, any outside it. */
export function origins(env: Env, production: boolean): '*' | readonly string[] {
  const raw = str(env, 'CORS_ORIGINS');
  if (raw === undefined) return production ? Object.freeze([]) : '*';
  if (raw === '*') return '*';
  const list = raw.split(/[\s,]+/).filter(Boolean);
  for (const origin of list) {
    let parsed: URL | undefined;
    try {
      parsed = new URL(origin);
    } catch {}
    if (!parsed || parsed.origin !== origin || !/^https?:$/.test(parsed.protocol))
      throw new ConfigError(
        'CORS_ORIGINS',
        `expected origins such as https://app.example.com (scheme, host, port; no path), or *; got ${JSON.stringify(origin)}`,
      );
  }
  return Object.freeze(list);
}
