import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { sql } from 'kysely';
import pino, { type Logger } from 'pino';
import { devSecret } from './auth/dev-secret.js';
import { mintToken } from './auth/mint.js';
import { ALL_SCOPES } from './auth/principal.js';
import { TokenVerifier } from './auth/tokens.js';
import type { Config } from './config.js';
import { connect, type Db } from './db/connect.js';
import { isMigrated, migrate } from './db/migrate.js';
import { schema } from './graphql/index.js';
import { createRestHandler } from './http/rest.js';
import { createHttpServer } from './http/server.js';
import { attachWebSockets } from './http/ws.js';
import { createYogaServer } from './http/yoga.js';
import { builtInKinds } from './kinds/index.js';
import { coerceError } from './tasks/errors.js';
import { TaskEvents } from './tasks/events.js';
import { KindRegistry, type TaskKind } from './tasks/kinds.js';
import { Purger } from './tasks/purge.js';
import { Runner } from './tasks/runner.js';
import { TaskService } from './tasks/service.js';
import { findTaskRow } from './tasks/store.js';

export interface AppOptions {
  config: Config;
  /** Kinds besides the built-in ones. */
  kinds?: readonly TaskKind<any, any>[];
  /** Replaces the built-in kinds entirely when given. */
  replaceBuiltInKinds?: boolean;
  log?: Logger;
  /** Identifies this process's leases. @default a random UUID */
  workerId?: string;
  /** Runner backstop poll, for tests. */
  backstopMs?: number;
}

export interface App {
  readonly config: Config;
  readonly log: Logger;
  readonly db: Db;
  readonly tasks: TaskService;
  readonly events: TaskEvents;
  readonly runner: Runner | undefined;
  readonly purger: Purger | undefined;
  readonly verifier: TokenVerifier;
  /** A token for principal `dev` with every scope, in development; undefined otherwise. */
  readonly devToken: string | undefined;
  /** Listens on config.host:config.port. @returns the base URL */
  listen(): Promise<string>;
  /** Graceful stop: see README "Execution guarantees". Idempotent. */
  stop(): Promise<void>;
}

/** Builds the whole app from a Config: database (migrated), events, runner, purge, HTTP. */
export async function createApp(options: AppOptions): Promise<App> {
  const { config } = options;
  const log = options.log ?? pino({ level: config.logLevel });
  const kinds = new KindRegistry([...(options.replaceBuiltInKinds ? [] : builtInKinds), ...(options.kinds ?? [])]);

  let secret = config.auth.jwtSecret;
  let devToken: string | undefined;
  if (!secret && !config.auth.jwksUrl) {
    // Development: a secret of our own, and a token to try things with.
    secret = devSecret(config.dataDir);
    devToken = await mintToken(secret, { sub: 'dev', scopes: ALL_SCOPES, ttl: '30d' });
  }
  const verifier = new TokenVerifier({
    secret: config.auth.jwksUrl ? undefined : secret,
    jwksUrl: config.auth.jwksUrl,
    issuer: config.auth.issuer,
    audience: config.auth.audience,
    defaultScopes: config.auth.defaultScopes,
  });

  const db = await connect({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, log });
  let migrated = false;
  try {
    const applied = await migrate(db.kysely);
    if (applied.length) log.info({ applied }, 'migrations applied');
    migrated = true;
  } catch (err) {
    await db.close();
    throw err;
  }

  const events = new TaskEvents(db.listener(log), (id) => findTaskRow(db.kysely, id), log);
  await events.start();
  const tasks = new TaskService(db.kysely, events, kinds, config.tasks, log);

  const runsTasks = config.role !== 'api';
  const servesApi = config.role !== 'worker';
  const runner = runsTasks
    ? new Runner({
        db: db.kysely,
        events,
        kinds,
        log,
        workerId: options.workerId ?? randomUUID(),
        concurrency: config.runnerConcurrency,
        leaseMs: config.tasks.leaseMs,
        ...(options.backstopMs ? { backstopMs: options.backstopMs } : {}),
      })
    : undefined;
  const purger = runsTasks ? new Purger(db.kysely, config.tasks.purgeIntervalMs, log) : undefined;

  const yoga = servesApi
    ? createYogaServer({ schema, tasks, verifier, log, graphiql: config.graphiql, graphiqlToken: devToken, production: config.production })
    : undefined;
  const server = createHttpServer({
    yoga,
    rest: servesApi ? createRestHandler({ tasks, verifier, log }) : undefined,
    ready: async () => {
      if (!migrated) return false;
      await sql`select 1`.execute(db.kysely);
      return isMigrated(db.kysely);
    },
  });
  const ws = yoga ? attachWebSockets(server, yoga, verifier, log) : undefined;

  runner?.start();
  purger?.start();

  let stopping: Promise<void> | undefined;
  return {
    config,
    log,
    db,
    tasks,
    events,
    runner,
    purger,
    verifier,
    devToken,
    listen: () =>
      new Promise((resolve, reject) => {
        server.once('error', reject);
        server.listen(config.port, config.host, () => {
          const { port } = server.address() as AddressInfo;
          const host = config.host.includes(':') ? `[${config.host}]` : config.host;
          resolve(`http://${host}:${port}`);
        });
      }),
    stop: () =>
      (stopping ??= (async () => {
        const step = async (what: string, fn: () => Promise<unknown> | undefined) => {
          try {
            await fn();
          } catch (err) {
            log.warn({ err: coerceError(err) }, `stopping: ${what} failed`);
          }
        };
        await step('runner', () => runner?.stop(config.tasks.shutdownGraceMs));
        await step('purge', () => purger?.stop());
        await step('websockets', () => ws?.close());
        await step('http', () => new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeAllConnections();
        }));
        await step('events', () => events.stop());
        await step('database', () => db.close());
      })()),
  };
}
