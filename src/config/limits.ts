import { isIP } from 'node:net';
import { bool, ConfigError, DAY, decimal, type Env, int, origins, str } from './env.js';

/** DESIGN §12: what one request, socket or principal may ask. */
export interface Limits {
  graphqlMaxDepth: number;
  graphqlMaxAliases: number;
  graphqlMaxTokens: number;
  graphqlMaxDirectives: number;
  /** `__schema`/`__type` answered; `__typename` always is. */
  graphqlIntrospection: boolean;
  httpMaxBodyBytes: number;
  httpHeadersTimeoutMs: number;
  httpRequestTimeoutMs: number;
  wsMaxPayloadBytes: number;
  wsMaxSubscriptionsPerSocket: number;
  /** Tokens a principal's bucket regains a second; 0: no rate limit. */
  rateLimitRps: number;
  /** The bucket's size; 0 with a rate: the rate rounded up. */
  rateLimitBurst: number;
  /** Origins a browser may call from; `*`: any origin, without credentials. */
  corsOrigins: '*' | readonly string[];
  /** Names (lower case, port aside) a request's `Host` may carry; `*`: any. */
  allowedHosts: '*' | readonly string[];
}

/** A DNS host name, as HOST and ALLOWED_HOSTS take it. */
export const HOSTNAME =
  /^(?=.{1,253}$)[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*\.?$/i;
const MIB = 1_048_576;

/** The names a loopback listener answers to by default: DNS rebinding gets none of them. */
export const LOOPBACK_HOSTS = Object.freeze(['localhost', '127.0.0.1', '[::1]']);

function isLoopbackHost(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host);
}

/**
 * `ALLOWED_HOSTS`: host names, IPv4 addresses or bracketed IPv6 addresses, comma- or
 * space-separated, or `*`. Unset: the loopback names when HOST is a loopback address (a
 * development server, which a DNS-rebinding page must not reach), else any.
 */
function allowedHosts(env: Env, host: string): '*' | readonly string[] {
  const raw = str(env, 'ALLOWED_HOSTS');
  if (raw === undefined) return isLoopbackHost(host) ? LOOPBACK_HOSTS : '*';
  if (raw === '*') return '*';
  const list = raw
    .split(/[\s,]+/)
    .filter(Boolean)
    .map((name) => name.toLowerCase().replace(/\.$/, ''));
  for (const name of list) {
    const v6 = /^\[(.+)\]$/.exec(name)?.[1];
    if (v6 !== undefined ? isIP(v6) !== 6 : isIP(name) !== 4 && !HOSTNAME.test(name))
      throw new ConfigError(
        'ALLOWED_HOSTS',
        `expected host names such as tasks.example.com, IP addresses ([::1] for IPv6; no port), or *; got ${JSON.stringify(name)}`,
      );
  }
  return Object.freeze(list);
}

/** The limits of DESIGN §12, from their variables; `host` picks ALLOWED_HOSTS' default. */
export function limits(env: Env, production: boolean, host = '127.0.0.1'): Limits {
  const rateLimitRps = decimal(env, 'RATE_LIMIT_RPS', 0, 1_000_000);
  const httpHeadersTimeoutMs = int(env, 'HTTP_HEADERS_TIMEOUT_MS', 10_000, 100, DAY);
  const httpRequestTimeoutMs = int(env, 'HTTP_REQUEST_TIMEOUT_MS', 30_000, 100, DAY);
  if (httpHeadersTimeoutMs > httpRequestTimeoutMs)
    throw new ConfigError(
      'HTTP_HEADERS_TIMEOUT_MS',
      `must be at most HTTP_REQUEST_TIMEOUT_MS (${httpRequestTimeoutMs})`,
    );
  return Object.freeze({
    graphqlMaxDepth: int(env, 'GRAPHQL_MAX_DEPTH', 20, 1, 1_000),
    graphqlMaxAliases: int(env, 'GRAPHQL_MAX_ALIASES', 30, 0, 10_000),
    graphqlMaxTokens: int(env, 'GRAPHQL_MAX_TOKENS', 10_000, 100, 1_000_000),
    graphqlMaxDirectives: int(env, 'GRAPHQL_MAX_DIRECTIVES', 50, 0, 10_000),
    graphqlIntrospection: bool(env, 'GRAPHQL_INTROSPECTION') ?? !production,
    httpMaxBodyBytes: int(env, 'HTTP_MAX_BODY_BYTES', MIB, 1_024, 1_024 * MIB),
    httpHeadersTimeoutMs,
    httpRequestTimeoutMs,
    wsMaxPayloadBytes: int(env, 'WS_MAX_PAYLOAD_BYTES', MIB, 1_024, 1_024 * MIB),
    wsMaxSubscriptionsPerSocket: int(env, 'WS_MAX_SUBSCRIPTIONS_PER_SOCKET', 100, 1, 100_000),
    rateLimitRps,
    rateLimitBurst:
      int(env, 'RATE_LIMIT_BURST', 0, 0, 1_000_000) || Math.max(1, Math.ceil(rateLimitRps)),
    corsOrigins: origins(env, production),
    allowedHosts: allowedHosts(env, host),
  });
}
