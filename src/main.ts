import pino from 'pino';
import { createApp } from './app.js';
import { ConfigError, loadConfig } from './config.js';
import { coerceError } from './tasks/errors.js';

/** Command line entry: config → app → listen; SIGTERM/SIGINT → graceful stop → exit 0. */
async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(`taskhandle: configuration error: ${err.message}`);
      process.exit(2);
    }
    throw err;
  }
  const log = pino({ level: config.logLevel });
  const app = await createApp({ config, log });
  const url = await app.listen();
  log.info({ url, role: config.role, database: config.databaseUrl ? 'postgres' : `pglite:${config.dataDir}` }, 'taskhandle listening');
  if (config.role !== 'worker') {
    const lines = [`taskhandle (${config.role}) on ${url}`];
    if (config.graphiql) lines.push(`GraphiQL:  ${url}/graphql`);
    if (app.devToken) {
      lines.push('Development token (principal "dev", every scope; GraphiQL already sends it):');
      lines.push(`  Authorization: Bearer ${app.devToken}`);
    }
    console.log(lines.join('\n'));
  }

  let signals = 0;
  const stop = (signal: NodeJS.Signals) => {
    if (++signals > 1) {
      log.warn({ signal }, 'second signal: exiting now');
      process.exit(1);
    }
    log.info({ signal }, 'stopping');
    app.stop().then(
      () => process.exit(0),
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
