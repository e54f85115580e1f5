import { loadConfig } from '../config/config.js';
import { connect } from '../db/connect.js';
import { migrate } from '../db/migrate.js';
import { createLogger } from '../log.js';

/** `npm run migrate`: applies pending migrations and exits (the server also does this at boot). */
const config = loadConfig();
const log = createLogger(config);
const db = await connect({
  databaseUrl: config.databaseUrl,
  preparedStatements: config.db.preparedStatements,
  dataDir: config.dataDir,
  timeouts: config.db,
  log,
});
try {
  const applied = await migrate(db.kysely);
  console.log(applied.length ? `applied: ${applied.join(', ')}` : 'up to date');
} finally {
  await db.close();
}
