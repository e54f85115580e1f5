import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import type { Plugin as YogaPlugin } from 'graphql-yoga';
import type { Logger } from 'pino';
import { devSecret } from './auth/dev-secret.js';
import { mintToken } from './auth/mint.js';
import { ALL_SCOPES } from './auth/principal.js';
import { TokenVerifier } from './auth/tokens.js';
import { type Config, ConfigError } from './config/config.js';
import { connect, type Db } from './db/connect.js';
import { migrate } from './db/migrate.js';
import { coerceError } from './errors.js';
import { a2aPushBody } from './faces/a2a/push-configs.js';
import { schema } from './faces/graphql/index.js';
import { checkManifest } from './faces/graphql/persisted.js';
import { builtInKinds } from './kinds/index.js';
import { createLogger } from './log.js';
import { registerEventHubSeries } from './metrics/event-hub.js';
import { Metrics } from './metrics/metrics.js';
import type { Clock } from './schedules/clock.js';
import { Scheduler } from './schedules/scheduler.js';
import { ScheduleService } from './schedules/service.js';
import { serveFaces } from './serve.js';
import { TaskEvents } from './tasks/events/hub.js';
import { KindRegistry, type TaskKind } from './tasks/kinds.js';
import { Purger } from './tasks/purge.js';
import { RateLimiter } from './tasks/rate-limit.js';
import { Runner } from './tasks/runner/runner.js';
import { TaskService } from './tasks/service.js';
import { findStoredTask } from './tasks/sql/find.js';
import type { BodyFormat } from './webhook-delivery/body.js';
import { Deliverer } from './webhook-delivery/deliverer.js';

export interface AppOptions {
  config: Config;
  /** Kinds besides the built-in ones. */
  kinds?: readonly TaskKind<any, any>[];
  /** Replaces the built-in kinds entirely when given. */
  replaceBuiltInKinds?: boolean;
  log?: Logger;
  /** Identifies this process's leases. @default a random UUID */
  workerId?: string;
  /**
   * yoga (or envelop) plugins for `/graphql`, after the server's own. One that hooks the HTTP
   * request or response (onRequest, onParams, onResponse…) turns the direct POST path off, so
   * it sees every request; one of envelop's hooks alone (onExecute…) keeps it. One that hooks
   * subscriptions (onSubscribe) has every subscription result over a WebSocket go through the
   * hooks, as it then sees each (faces/graphql/ws-frames.ts).
   */
  graphqlPlugins?: readonly YogaPlugin<any, any, any>[];
  /**
   * PGlite in memory (`DATA_DIR=memory://`) only: start from this data directory, as PGlite's
   * `dumpDataDir` wrote it (say, already migrated), instead of an empty cluster.
   */
  pgliteDataDir?: Blob;
  /**
   * The time schedules fire by (DESIGN §17); every process over one database must agree on
   * it. @default the wall clock
   */
  scheduleClock?: Clock;
}

export interface App {
  readonly config: Config;
  readonly log: Logger;
  readonly db: Db;
  readonly tasks: TaskService;
  readonly events: TaskEvents;
  readonly runner: Runner | undefined;
  readonly purger: Purger | undefined;
  /** Webhook delivery (DESIGN §11): in worker and all processes. */
  readonly deliverer: Deliverer | undefined;
  /** Schedules (DESIGN §17): the operations, and their firing in worker and all processes. */
  readonly schedules: ScheduleService;
  readonly scheduler: Scheduler | undefined;
  readonly verifier: TokenVerifier;
  /** The process's Prometheus series; also the TaskObserver the domain reports to. */
  readonly metrics: Metrics;
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
  const log = options.log ?? createLogger(config);
  const kinds = new KindRegistry([
    ...(options.replaceBuiltInKinds ? [] : builtInKinds),
    ...(options.kinds ?? []),
  ]);
  const { defaultSkill } = config.a2a;
  // Kinds are known only here: checked before anything is opened, as a config error.
  if (defaultSkill !== undefined && !kinds.get(defaultSkill)) {
    const registered = kinds.list().map((kind) => kind.name);
    throw new ConfigError(
      'A2A_DEFAULT_SKILL',
      `names no registered task kind: ${JSON.stringify(defaultSkill)} (registered: ${registered.join(', ')})`,
    );
  }
  checkManifest(config.persisted.manifest, schema);

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

  const db = await connect({
    databaseUrl: config.databaseUrl,
    listenUrl: config.databaseListenUrl,
    preparedStatements: config.db.preparedStatements,
    dataDir: config.dataDir,
    pgliteDataDir: options.pgliteDataDir,
    timeouts: config.db,
    log,
  });
  try {
    const applied = await migrate(db.kysely);
    if (applied.length) log.info({ applied }, 'migrations applied');
  } catch (err) {
    await db.close();
    throw err;
  }

  const servesApi = config.role !== 'worker';
  // A worker-only process answers no reads: a row it wrote (every outcome) would be kept for
  // nobody, its payload measured and its memory held for the collector to walk.
  const events = new TaskEvents(
    db.listener(log),
    (id) => findStoredTask(db.kysely, id),
    log,
    servesApi ? undefined : { maxRows: 0 },
  );
  // A process that runs no tasks and sends no deliveries needs only the news of changes.
  await events.start({ work: config.role !== 'api' });
  const metrics = new Metrics({ db: db.kysely, log, token: config.metricsToken });
  events.onReconnect(() => metrics.listenReconnected());
  registerEventHubSeries(metrics.registry, events);
  const runsTasks = config.role !== 'api';
  /** The address `listen` resolved, for signal URLs when PUBLIC_URL is unset. */
  let listeningAt: string | undefined;
  const workerId = options.workerId ?? randomUUID();
  const runner = runsTasks
    ? new Runner({
        db: db.kysely,
        events,
        kinds,
        log,
        workerId,
        concurrency: config.runnerConcurrency,
        prefetch: config.runnerPrefetch,
        fairness: config.runnerFairness,
        leaseMs: config.tasks.leaseMs,
        observer: metrics,
        retention: config.tasks,
        publicUrl: () => config.publicUrl ?? listeningAt ?? `http://${hostPort(config)}`,
      })
    : undefined;
  const tasks = new TaskService({
    db: db.kysely,
    events,
    kinds,
    retention: config.tasks,
    log,
    webhookPolicy: config.webhooks,
    rateLimiter: new RateLimiter(config.limits),
    // A task started here, of a kind run here, may be inserted already claimed (`StartsHere`).
    runner: servesApi ? runner : undefined,
  });
  const schedules = new ScheduleService(db.kysely, tasks, options.scheduleClock);
  const purger = runsTasks
    ? new Purger(db.kysely, config.tasks.purgeIntervalMs, log, {
        onBatch: (rows) => metrics.purgeBatch(rows),
      })
    : undefined;
  const scheduler = runsTasks
    ? new Scheduler({ db: db.kysely, tasks, events, log, clock: options.scheduleClock })
    : undefined;
  const formats: Partial<Record<'a2a', BodyFormat>> = { a2a: a2aPushBody };
  const deliverer = runsTasks
    ? new Deliverer({
        db: db.kysely,
        events,
        log,
        workerId,
        config: config.webhooks,
        formats,
        observer: metrics,
      })
    : undefined;

  const { server, ws, mcp } = serveFaces({
    config,
    log,
    db,
    tasks,
    schedules,
    verifier,
    metrics,
    devToken,
    graphqlPlugins: options.graphqlPlugins,
  });

  runner?.start();
  purger?.start();
  deliverer?.start();
  scheduler?.start();

  let stopping: Promise<void> | undefined;
  return {
    config,
    log,
    db,
    tasks,
    events,
    runner,
    purger,
    deliverer,
    schedules,
    scheduler,
    verifier,
    metrics,
    devToken,
    listen: () =>
      new Promise((resolve, reject) => {
        server.once('error', reject);
        server.listen(config.port, config.host, () => {
          const { port } = server.address() as AddressInfo;
          listeningAt = `http://${hostPort({ host: config.host, port })}`;
          resolve(listeningAt);
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
        // No task is started here once stopping has begun.
        await step('schedules', () => scheduler?.stop());
        // Handlers and webhook attempts share one grace period.
        await Promise.all([
          step('runner', () => runner?.stop(config.tasks.shutdownGraceMs)),
          step('webhooks', () => deliverer?.stop(config.tasks.shutdownGraceMs)),
        ]);
        await step('purge', () => purger?.stop());
        await step('websockets', () => ws?.close());
        await step('mcp sessions', () => mcp?.close());
        await step(
          'http',
          () =>
            new Promise<void>((resolve) => {
              server.close(() => resolve());
              server.closeAllConnections();
            }),
        );
        await step('events', () => events.stop());
        await step('database', () => db.close());
      })()),
  };
}

/** `host:port` as a URL writes it (an IPv6 address in brackets). */
function hostPort({ host, port }: { host: string; port: number }): string {
  return `${host.includes(':') ? `[${host}]` : host}:${port}`;
}
