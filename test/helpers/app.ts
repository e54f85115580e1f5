import { Writable } from 'node:stream';
import { type Client, createClient } from 'graphql-ws';
import pino, { type Logger } from 'pino';
import { expect } from 'vitest';
import WebSocket from 'ws';
import { type App, type AppOptions, createApp } from '../../src/app.js';
import { mintToken } from '../../src/auth/mint.js';
import { ALL_SCOPES } from '../../src/auth/principal.js';
import { ConfigError, loadConfig } from '../../src/config/config.js';
import type { TaskKind } from '../../src/tasks/kinds.js';
import { databaseEnv } from './database-env.js';
import { freshDatabase, pgliteImage, type TestDatabase } from './db.js';
import { SECRET } from './secret.js';

export { SECRET };

export interface TestAppOptions {
  /** Environment on top of the test defaults (auth secret, port 0, silent logs). */
  env?: Record<string, string>;
  kinds?: TaskKind<any, any>[];
  replaceBuiltInKinds?: boolean;
  /** Share a database with another app (Postgres only); default: a fresh one. */
  database?: TestDatabase;
  /** The app's logger (e.g. pino writing to a stream a test reads); default: pino at LOG_LEVEL. */
  log?: Logger;
  /** yoga plugins for `/graphql` (AppOptions.graphqlPlugins). */
  graphqlPlugins?: AppOptions['graphqlPlugins'];
  /** The time schedules fire by (AppOptions.scheduleClock). */
  scheduleClock?: AppOptions['scheduleClock'];
}

export interface GraphQLResponse<T = any> {
  data?: T | null;
  errors?: Array<{
    message: string;
    extensions?: { code?: string } & Record<string, unknown>;
    path?: Array<string | number>;
  }>;
}

export interface TestApp {
  app: App;
  url: string;
  wsUrl: string;
  database: TestDatabase;
  /** Mints a token for `sub` (default scopes: read and write). */
  token(sub: string, scopes?: readonly string[], ttl?: string | number): Promise<string>;
  /** POSTs a GraphQL operation; `token` null sends no Authorization header. */
  gql<T = any>(
    query: string,
    variables?: Record<string, unknown>,
    token?: string | null,
  ): Promise<GraphQLResponse<T>>;
  /** A graphql-ws client authenticated with `token`. */
  ws(token: string | null, options?: { retryAttempts?: number }): Client;
  stop(): Promise<void>;
}

/** Starts a real app on a throwaway database, listening on a free loopback port. */
export async function startTestApp(options: TestAppOptions = {}): Promise<TestApp> {
  const database = options.database ?? (await freshDatabase());
  const config = loadConfig({
    NODE_ENV: 'test',
    AUTH_JWT_SECRET: SECRET,
    PORT: '0',
    HOST: '127.0.0.1',
    DATA_DIR: 'memory://',
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    TASK_SHUTDOWN_GRACE_MS: '100',
    ...(database.url ? databaseEnv(database.url) : {}),
    ...options.env,
  });
  const app = await createApp({
    config,
    // A throwaway in-memory PGlite starts as a clone of the run's migrated template.
    ...(!config.databaseUrl && config.dataDir === 'memory://'
      ? { pgliteDataDir: await pgliteImage() }
      : {}),
    kinds: options.kinds ?? [],
    replaceBuiltInKinds: options.replaceBuiltInKinds ?? false,
    ...(options.log ? { log: options.log } : {}),
    ...(options.graphqlPlugins ? { graphqlPlugins: options.graphqlPlugins } : {}),
    ...(options.scheduleClock ? { scheduleClock: options.scheduleClock } : {}),
  });
  const url = await app.listen();
  const wsUrl = `${url.replace(/^http/, 'ws')}/graphql`;
  const clients: Client[] = [];
  return {
    app,
    url,
    wsUrl,
    database,
    token: (sub, scopes = ['tasks:read', 'tasks:write'], ttl = '1h') =>
      mintToken(SECRET, { sub, scopes, ttl }),
    async gql(query, variables = {}, token = null) {
      const response = await fetch(`${url}/graphql`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          ...(token ? { authorization: `Bearer ${token}` } : {}),
        },
        body: JSON.stringify({ query, variables }),
      });
      return (await response.json()) as GraphQLResponse;
    },
    ws(token, wsOptions = {}) {
      const client = createClient({
        url: wsUrl,
        webSocketImpl: WebSocket,
        lazy: true,
        retryAttempts: wsOptions.retryAttempts ?? 0,
        connectionParams: token ? { authorization: `Bearer ${token}` } : {},
      });
      clients.push(client);
      return client;
    },
    async stop() {
      await Promise.all(clients.map((c) => c.dispose()));
      await app.stop();
      if (!options.database) await database.drop();
    },
  };
}

/** A logger at `level` that keeps each line it writes, parsed, in `lines`: what an app logged. */
export function capturingLog(level = 'info'): {
  log: Logger;
  lines: Array<Record<string, any>>;
} {
  const lines: Array<Record<string, any>> = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n')) if (line) lines.push(JSON.parse(line));
      done();
    },
  });
  return { log: pino({ level }, sink), lines };
}

/** The error `loadConfig(env)` refuses `env` with (fails the test if it loads). */
export function refusalOf(env: Record<string, string>): ConfigError {
  try {
    loadConfig(env);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return err as ConfigError;
  }
  throw new Error(`loadConfig accepted ${JSON.stringify(env)}`);
}

/** Every scope, for an admin token. */
export const ADMIN_SCOPES = ALL_SCOPES;

/** Collects every event of a subscription until it completes (or errors). */
export function collect<T = any>(
  client: Client,
  query: string,
  variables: Record<string, unknown>,
): Promise<{ events: T[]; error?: unknown }> {
  return new Promise((resolve) => {
    const events: T[] = [];
    client.subscribe<T>(
      { query, variables },
      {
        // graphql-ws reports a refused subscription (NOT_FOUND, FORBIDDEN…) as a result with errors.
        next: (value) =>
          value.errors ? resolve({ events, error: value.errors }) : events.push(value.data as T),
        error: (error) => resolve({ events, error }),
        complete: () => resolve({ events }),
      },
    );
  });
}

/** Polls `check` until it returns a value other than undefined, or fails after `timeoutMs`. */
export async function eventually<T>(
  check: () => Promise<T | undefined>,
  timeoutMs = 10_000,
  everyMs = 25,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

export { TASK_FIELDS } from './operations.js';
