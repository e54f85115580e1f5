import { isIP } from 'node:net';

/**
 * Environment → frozen Config. Every variable of DESIGN §1 is parsed here and nowhere else;
 * a bad value throws a ConfigError naming the variable, and `main` stops with its message.
 */

export type Role = 'api' | 'worker' | 'all';

export interface Config {
  port: number;
  host: string;
  /** `postgres://…` for a Postgres server; undefined → PGlite in `dataDir`. */
  databaseUrl: string | undefined;
  /** PGlite's data directory and the development secret's home; `memory://` keeps nothing. */
  dataDir: string;
  role: Role;
  production: boolean;
  graphiql: boolean;
  auth: {
    jwtSecret: string | undefined;
    jwksUrl: string | undefined;
    issuer: string | undefined;
    audience: string | undefined;
    defaultScopes: readonly string[];
  };
  tasks: {
    defaultTtlMs: number;
    minTtlMs: number;
    maxTtlMs: number;
    leaseMs: number;
    purgeIntervalMs: number;
    shutdownGraceMs: number;
  };
  runnerConcurrency: number;
  logLevel: string;
}

export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    message: string,
  ) {
    super(`${variable}: ${message}`);
    this.name = 'ConfigError';
  }
}

type Env = Record<string, string | undefined>;

function int(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw.trim())) throw new ConfigError(name, `expected a whole number, got ${JSON.stringify(raw)}`);
  const value = Number(raw.trim());
  if (value < min || value > max) throw new ConfigError(name, `must be between ${min} and ${max}, got ${value}`);
  return value;
}

function str(env: Env, name: string): string | undefined {
  const raw = env[name]?.trim();
  return raw === '' ? undefined : raw;
}

function url(env: Env, name: string, protocols: readonly string[]): string | undefined {
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

function bool(env: Env, name: string): boolean | undefined {
  const raw = str(env, name)?.toLowerCase();
  if (raw === undefined) return undefined;
  if (['1', 'true', 'yes', 'on'].includes(raw)) return true;
  if (['0', 'false', 'no', 'off'].includes(raw)) return false;
  throw new ConfigError(name, `expected true or false, got ${JSON.stringify(raw)}`);
}

const DAY = 86_400_000;
const HOSTNAME = /^(?=.{1,253}$)[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*\.?$/i;
/** pino's levels. */
const LOG_LEVELS: readonly string[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];
/** ttlMs travels as a GraphQL Int (32-bit signed): about 24.8 days at most. */
const MAX_INT = 2_147_483_647;

export function loadConfig(env: Env = process.env): Config {
  const production = env.NODE_ENV === 'production';
  const role = str(env, 'ROLE') ?? 'all';
  if (role !== 'api' && role !== 'worker' && role !== 'all') {
    throw new ConfigError('ROLE', `expected api, worker or all, got ${JSON.stringify(role)}`);
  }
  const host = str(env, 'HOST') ?? '127.0.0.1';
  if (isIP(host) === 0 && !HOSTNAME.test(host)) throw new ConfigError('HOST', `expected an IP address or a host name, got ${JSON.stringify(host)}`);
  const logLevel = str(env, 'LOG_LEVEL') ?? (env.NODE_ENV === 'test' ? 'silent' : 'info');
  if (!LOG_LEVELS.includes(logLevel)) throw new ConfigError('LOG_LEVEL', `expected one of ${LOG_LEVELS.join(', ')}, got ${JSON.stringify(logLevel)}`);

  const jwtSecret = str(env, 'AUTH_JWT_SECRET');
  if (jwtSecret !== undefined && Buffer.byteLength(jwtSecret) < 32) {
    throw new ConfigError('AUTH_JWT_SECRET', 'must be at least 32 bytes for HS256');
  }
  const jwksUrl = url(env, 'AUTH_JWKS_URL', ['http:', 'https:']);
  if (production && jwtSecret === undefined && jwksUrl === undefined) {
    throw new ConfigError(
      'AUTH_JWT_SECRET',
      'NODE_ENV=production needs AUTH_JWT_SECRET or AUTH_JWKS_URL; refusing to start without authentication',
    );
  }
  const defaultScopes = (str(env, 'AUTH_DEFAULT_SCOPES') ?? 'tasks:read tasks:write').split(/\s+/).filter(Boolean);
  for (const scope of defaultScopes) {
    if (!/^[\x21-\x7e]+$/.test(scope)) throw new ConfigError('AUTH_DEFAULT_SCOPES', `bad scope ${JSON.stringify(scope)}`);
  }

  const minTtlMs = int(env, 'TASK_MIN_TTL_MS', 1_000, 1, MAX_INT);
  const maxTtlMs = int(env, 'TASK_MAX_TTL_MS', 7 * DAY, 1, MAX_INT);
  if (maxTtlMs < minTtlMs) throw new ConfigError('TASK_MAX_TTL_MS', `must be at least TASK_MIN_TTL_MS (${minTtlMs})`);
  const defaultTtlMs = int(env, 'TASK_DEFAULT_TTL_MS', 3_600_000, 1, MAX_INT);
  if (defaultTtlMs < minTtlMs || defaultTtlMs > maxTtlMs) {
    throw new ConfigError('TASK_DEFAULT_TTL_MS', `must lie within [TASK_MIN_TTL_MS, TASK_MAX_TTL_MS] = [${minTtlMs}, ${maxTtlMs}]`);
  }

  const config: Config = {
    port: int(env, 'PORT', 4000, 0, 65_535),
    host,
    databaseUrl: url(env, 'DATABASE_URL', ['postgres:', 'postgresql:']),
    dataDir: str(env, 'DATA_DIR') ?? './.data',
    role,
    production,
    graphiql: bool(env, 'GRAPHIQL') ?? !production,
    auth: {
      jwtSecret,
      jwksUrl,
      issuer: str(env, 'AUTH_ISSUER'),
      audience: str(env, 'AUTH_AUDIENCE'),
      defaultScopes: Object.freeze(defaultScopes),
    },
    tasks: {
      defaultTtlMs,
      minTtlMs,
      maxTtlMs,
      leaseMs: int(env, 'TASK_LEASE_MS', 30_000, 100, DAY),
      purgeIntervalMs: int(env, 'TASK_PURGE_INTERVAL_MS', 60_000, 10, DAY),
      shutdownGraceMs: int(env, 'TASK_SHUTDOWN_GRACE_MS', 10_000, 0, DAY),
    },
    runnerConcurrency: int(env, 'RUNNER_CONCURRENCY', 8, 1, 10_000),
    logLevel,
  };
  Object.freeze(config.auth);
  Object.freeze(config.tasks);
  return Object.freeze(config);
}
