import { constants } from 'node:os';
import { ConfigError, loadConfig } from './config/config.js';
import { coerceError } from './errors.js';
import { createLogger } from './log.js';
import { startTracing, type Tracing } from './tracing/start.js';

/** Signals this close to the first are the same signal delivered twice, not a second one. */
const REPEAT_MS = 1_000;

/** Command line entry: config → app → listen; SIGTERM/SIGINT → graceful stop → exit 0. */
async function main(): Promise<void> {
  let config: ReturnType<typeof loadConfig>;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(`taskhandle: configuration error: ${err.message}`);
      process.exit(2);
    }
    throw err;
  }
  const log = createLogger(config);
  // Tracing first, when the OTEL_* variables ask for it (DESIGN §13): the app's modules load
  // after it, so its instrumentations see pg load.
  let tracing: Tracing | undefined;
  try {
    tracing = await startTracing(config.tracing);
    if (tracing) log.info('tracing on (OpenTelemetry)');
  } catch (err) {
    log.error({ err: coerceError(err) }, 'tracing could not start; running without it');
  }
  const { createApp } = await import('./app.js');
  let app: Awaited<ReturnType<typeof createApp>>;
  try {
    app = await createApp({ config, log });
  } catch (err) {
    // A variable only the app can check (A2A_DEFAULT_SKILL names a registered kind).
    if (err instanceof ConfigError) {
      console.error(`taskhandle: configuration error: ${err.message}`);
      process.exit(2);
    }
    throw err;
  }
  const url = await app.listen();
  log.info(
    {
      url,
      role: config.role,
      database: config.databaseUrl ? 'postgres' : `pglite:${config.dataDir}`,
      allowedHosts: config.limits.allowedHosts,
    },
    'taskhandle listening',
  );
  if (config.role !== 'worker') {
    // The first URL printed is one a browser can open.
    const lines = [
      config.dashboard
        ? `taskhandle (${config.role}): dashboard at ${url}/`
        : config.graphiql
          ? `taskhandle (${config.role}): GraphiQL at ${url}/graphql`
          : `taskhandle (${config.role}): GraphQL at ${url}/graphql, REST at ${url}/v1/jobs`,
    ];
    if (config.dashboard && config.graphiql) lines.push(`GraphiQL at ${url}/graphql`);
    const { allowedHosts } = config.limits;
    lines.push(
      allowedHosts === '*'
        ? 'Answers any Host name (ALLOWED_HOSTS=*)'
        : `Answers the Host names ${allowedHosts.join(', ')} only (ALLOWED_HOSTS)`,
    );
    if (app.devToken) {
      lines.push('Development token (principal "dev", every scope; GraphiQL already sends it):');
      lines.push(`  Authorization: Bearer ${app.devToken}`);
    }
    console.log(lines.join('\n'));
  }

  let stoppingSince: number | undefined;
  const stop = (signal: NodeJS.Signals) => {
    if (stoppingSince !== undefined) {
      // One Ctrl-C reaches the server twice: from the terminal's process group and again
      // forwarded by npm. Only a signal that comes later is a person insisting.
      if (Date.now() - stoppingSince < REPEAT_MS) return;
      log.warn({ signal }, 'second signal: exiting now');
      process.exit(128 + (constants.signals[signal] ?? 0));
    }
    stoppingSince = Date.now();
    log.info({ signal }, 'stopping');
    setTimeout(() => log.debug('a second signal now forces the exit'), REPEAT_MS).unref();
    app
      .stop()
      .then(() => tracing?.shutdown())
      .then(
        () => {
          log.info('stopped');
          process.exit(0);
        },
        (err: unknown) => {
          log.error({ err: coerceError(err) }, 'stop failed');
          process.exit(1);
        },
      );
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

main().catch((err: unknown) => {
  console.error('taskhandle: failed to start:', coerceError(err));
  process.exit(1);
});
