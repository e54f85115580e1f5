import { isIP } from 'node:net';
import { bool, ConfigError, DAY, type Env, int, str, token, url } from './env.js';
import { HOSTNAME, type Limits, limits } from './limits.js';
import { type PersistedOperationsConfig, persistedOperationsConfig } from './persisted.js';
import { type TracingConfig, tracingConfig } from './tracing.js';

export { ConfigError } from './env.js';
export { type Limits, LOOPBACK_HOSTS } from './limits.js';
export type { PersistedOperationsConfig } from './persisted.js';
export type { TracingConfig } from './tracing.js';

/**
 * Environment → frozen Config. Every variable of DESIGN §1 is parsed here and nowhere else;
 * a bad value throws a ConfigError naming the variable, and `main` stops with its message.
 */

export type Role = 'api' | 'worker' | 'all';

export interface Config {
  port: number;
  host: string;
  /**
   * The address outside systems reach this server at, without a trailing slash: signal URLs
   * (DESIGN §16) start with it. Unset: `http://HOST:PORT` as the server listens.
   */
  publicUrl: string | undefined;
  /** `postgres://…` for a Postgres server; undefined → PGlite in `dataDir`. */
  databaseUrl: string | undefined;
  /**
   * The one LISTEN connection's server, when `databaseUrl` goes through a transaction-mode
   * pooler (where LISTEN does not survive the transaction); undefined → `databaseUrl`.
   */
  databaseListenUrl: string | undefined;
  /** PGlite's data directory and the development secret's home; `memory://` keeps nothing. */
  dataDir: string;
  role: Role;
  production: boolean;
  /** NODE_ENV=development: GraphQL errors unmasked, with their stacks (never in production). */
  development: boolean;
  /**
   * GraphiQL at `/graphql`: `GRAPHIQL`, on outside production; off in persisted-only mode
   * unless `GRAPHQL_PERSISTED_GRAPHIQL=true`.
   */
  graphiql: boolean;
  /** Persisted operations and APQ on `/graphql`. */
  persisted: PersistedOperationsConfig;
  /** The dashboard at `/`. @default true */
  dashboard: boolean;
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
  /** Tasks a worker claims ahead of its free slots (its local queue). */
  runnerPrefetch: number;
  /** DESIGN §17: `owner` takes owners in turn within a priority; `fifo` the earliest due first. */
  runnerFairness: 'owner' | 'fifo';
  a2a: {
    /**
     * The kind a message naming no skill starts (DESIGN §10), with `{ text, data, messageId }`
     * as input; undefined: such a message is answered with the list of skills. Kinds are
     * registered in `createApp`, so it checks the name (a ConfigError naming the variable).
     */
    defaultSkill: string | undefined;
  };
  mcp: {
    /** A session with no request for this long is closed. */
    sessionIdleMs: number;
    /** Sessions one process holds at once; `initialize` beyond is refused with 503. */
    maxSessions: number;
  };
  webhooks: WebhookConfig;
  /** Postgres only (PGlite has no network): what a query or a new connection may take. */
  db: {
    statementTimeoutMs: number;
    connectTimeoutMs: number;
    /**
     * Hot statements are prepared once per connection and run by name; off behind a pooler
     * that hands each transaction another server connection. @default true
     */
    preparedStatements: boolean;
  };
  /** When set, `GET /metrics` needs `Authorization: Bearer <it>`. */
  metricsToken: string | undefined;
  logLevel: string;
  /** DESIGN §12: what one request, socket or principal may ask. */
  limits: Limits;
  /** DESIGN §13: OpenTelemetry tracing, from the standard OTEL_* variables. */
  tracing: TracingConfig;
}

/** Webhook delivery (DESIGN §11). */
export interface WebhookConfig {
  /** An attempt without a 2xx answer by then fails. @default 10_000 */
  timeoutMs: number;
  /** The delays before each retry, in turn: 1 + its length attempts in all. */
  retryScheduleMs: readonly number[];
  /** Attempts one process makes at once. @default 16 */
  concurrency: number;
  /** Lifts the address guard (loopback, private, link-local…): tests and private networks. */
  allowPrivate: boolean;
  /**
   * How often a process looks for due deliveries without being notified: retries come due
   * by the clock, not by a NOTIFY, so this bounds how late one starts. @default 1_000
   */
  pollIntervalMs: number;
}

/** 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h. */
export const DEFAULT_RETRY_SCHEDULE_MS = Object.freeze([
  5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000,
]);

function schedule(env: Env, name: string): readonly number[] {
  const raw = str(env, name);
  if (raw === undefined) return DEFAULT_RETRY_SCHEDULE_MS;
  const parts = raw.split(',').map((p) => p.trim());
  if (parts.length < 1 || parts.length > 20 || parts.some((p) => !/^\d+$/.test(p)))
    throw new ConfigError(
      name,
      `expected 1 to 20 comma-separated whole numbers of milliseconds, got ${JSON.stringify(raw)}`,
    );
  const delays = parts.map(Number);
  if (delays.some((d) => d > 7 * DAY))
    throw new ConfigError(name, `a delay may be at most ${7 * DAY} ms (7 days)`);
  return Object.freeze(delays);
}
/** pino's levels. */
const LOG_LEVELS: readonly string[] = [
  'fatal',
  'error',
  'warn',
  'info',
  'debug',
  'trace',
  'silent',
];
/** ttlMs travels as a GraphQL Int (32-bit signed): about 24.8 days at most. */
const MAX_INT = 2_147_483_647;

export function loadConfig(env: Env = process.env): Config {
  const production = env.NODE_ENV === 'production';
  const fairness = str(env, 'RUNNER_FAIRNESS') ?? 'owner';
  if (fairness !== 'owner' && fairness !== 'fifo')
    throw new ConfigError(
      'RUNNER_FAIRNESS',
      `expected owner or fifo, got ${JSON.stringify(fairness)}`,
    );
  const role = str(env, 'ROLE') ?? 'all';
  if (role !== 'api' && role !== 'worker' && role !== 'all') {
    throw new ConfigError('ROLE', `expected api, worker or all, got ${JSON.stringify(role)}`);
  }
  const host = str(env, 'HOST') ?? '127.0.0.1';
  if (isIP(host) === 0 && !HOSTNAME.test(host))
    throw new ConfigError(
      'HOST',
      `expected an IP address or a host name, got ${JSON.stringify(host)}`,
    );
  const logLevel = str(env, 'LOG_LEVEL') ?? (env.NODE_ENV === 'test' ? 'silent' : 'info');
  if (!LOG_LEVELS.includes(logLevel))
    throw new ConfigError(
      'LOG_LEVEL',
      `expected one of ${LOG_LEVELS.join(', ')}, got ${JSON.stringify(logLevel)}`,
    );

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
  const defaultScopes = (str(env, 'AUTH_DEFAULT_SCOPES') ?? 'tasks:read tasks:write')
    .split(/\s+/)
    .filter(Boolean);
  for (const scope of defaultScopes) {
    if (!/^[\x21-\x7e]+$/.test(scope))
      throw new ConfigError('AUTH_DEFAULT_SCOPES', `bad scope ${JSON.stringify(scope)}`);
  }

  const minTtlMs = int(env, 'TASK_MIN_TTL_MS', 1_000, 1, MAX_INT);
  const maxTtlMs = int(env, 'TASK_MAX_TTL_MS', 7 * DAY, 1, MAX_INT);
  if (maxTtlMs < minTtlMs)
    throw new ConfigError('TASK_MAX_TTL_MS', `must be at least TASK_MIN_TTL_MS (${minTtlMs})`);
  const defaultTtlMs = int(env, 'TASK_DEFAULT_TTL_MS', 3_600_000, 1, MAX_INT);
  if (defaultTtlMs < minTtlMs || defaultTtlMs > maxTtlMs) {
    throw new ConfigError(
      'TASK_DEFAULT_TTL_MS',
      `must lie within [TASK_MIN_TTL_MS, TASK_MAX_TTL_MS] = [${minTtlMs}, ${maxTtlMs}]`,
    );
  }

  const databaseUrl = url(env, 'DATABASE_URL', ['postgres:', 'postgresql:']);
  const databaseListenUrl = url(env, 'DATABASE_LISTEN_URL', ['postgres:', 'postgresql:']);
  if (databaseListenUrl !== undefined && databaseUrl === undefined)
    throw new ConfigError(
      'DATABASE_LISTEN_URL',
      'needs DATABASE_URL: the embedded database listens in process',
    );

  const persisted = persistedOperationsConfig(env);

  const config: Config = {
    port: int(env, 'PORT', 4000, 0, 65_535),
    host,
    publicUrl: url(env, 'PUBLIC_URL', ['http:', 'https:'])?.replace(/\/+$/, ''),
    databaseUrl,
    databaseListenUrl,
    dataDir: str(env, 'DATA_DIR') ?? './.data',
    role,
    production,
    development: env.NODE_ENV === 'development',
    graphiql:
      (bool(env, 'GRAPHIQL') ?? !production) && (!persisted.only || persisted.adHocForAdmins),
    persisted,
    dashboard: bool(env, 'DASHBOARD') ?? true,
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
    runnerPrefetch: int(
      env,
      'RUNNER_PREFETCH',
      Math.min(3 * int(env, 'RUNNER_CONCURRENCY', 8, 1, 10_000), 1_000),
      0,
      100_000,
    ),
    runnerFairness: fairness,
    a2a: { defaultSkill: str(env, 'A2A_DEFAULT_SKILL') },
    mcp: {
      sessionIdleMs: int(env, 'MCP_SESSION_IDLE_MS', 1_800_000, 100, DAY),
      maxSessions: int(env, 'MCP_MAX_SESSIONS', 10_000, 1, 1_000_000),
    },
    webhooks: {
      timeoutMs: int(env, 'WEBHOOK_TIMEOUT_MS', 10_000, 1, 600_000),
      retryScheduleMs: schedule(env, 'WEBHOOK_RETRY_SCHEDULE_MS'),
      concurrency: int(env, 'WEBHOOK_CONCURRENCY', 16, 1, 10_000),
      allowPrivate: bool(env, 'WEBHOOK_ALLOW_PRIVATE') ?? false,
      pollIntervalMs: int(env, 'WEBHOOK_POLL_INTERVAL_MS', 1_000, 10, 60_000),
    },
    db: {
      statementTimeoutMs: int(env, 'DB_STATEMENT_TIMEOUT_MS', 10_000, 10, DAY),
      connectTimeoutMs: int(env, 'DB_CONNECT_TIMEOUT_MS', 3_000, 10, 600_000),
      preparedStatements: bool(env, 'DB_PREPARED_STATEMENTS') ?? true,
    },
    metricsToken: token(env, 'METRICS_TOKEN'),
    logLevel,
    limits: limits(env, production, host),
    tracing: tracingConfig(env),
  };
  Object.freeze(config.db);
  Object.freeze(config.auth);
  Object.freeze(config.tasks);
  Object.freeze(config.a2a);
  Object.freeze(config.mcp);
  Object.freeze(config.webhooks);
  Object.freeze(config.tracing);
  return Object.freeze(config);
}
