import pg from 'pg';
import { createApp } from '../../src/app.js';
import { loadConfig } from '../../src/config/config.js';
import { defineTaskKind } from '../../src/tasks/kinds.js';

/**
 * The server as `npm start` builds it, in a process of its own, with two kinds that write
 * what they do into the shared database (table `test_spans`, stamped by Postgres's clock, so
 * spans from several processes compare): `span` runs `ms` and records its start and end;
 * `crashy` records its start and, on its first attempt, never ends. The test creates the table.
 */
const config = loadConfig();
const pool = new pg.Pool({ connectionString: config.databaseUrl!, max: 4 });

const span = defineTaskKind<{ key: string; ms: number }, { pid: number }>({
  name: 'span',
  description: 'records its start and end',
  inputSchema: { type: 'object' },
  async run({ taskId, input, attempt, signal }) {
    await pool.query('insert into test_spans values ($1, $2, $3, $4, clock_timestamp(), null)', [
      taskId,
      input.key,
      process.pid,
      attempt,
    ]);
    await new Promise((resolve) => setTimeout(resolve, input.ms));
    signal.throwIfAborted();
    await pool.query(
      'update test_spans set ended_at = clock_timestamp() where task_id = $1 and attempt = $2',
      [taskId, attempt],
    );
    return { pid: process.pid };
  },
});

const crashy = defineTaskKind<Record<string, never>, { pid: number }>({
  name: 'crashy',
  description: 'hangs on its first attempt',
  inputSchema: { type: 'object' },
  async run({ taskId, attempt }) {
    await pool.query('insert into test_spans values ($1, null, $2, $3, clock_timestamp(), null)', [
      taskId,
      process.pid,
      attempt,
    ]);
    if (attempt === 1) await new Promise(() => {});
    return { pid: process.pid };
  },
});

const app = await createApp({ config, kinds: [span, crashy] });
const url = await app.listen();
console.log(JSON.stringify({ msg: 'work server listening', url, pid: process.pid }));
process.on('SIGTERM', () => {
  void app
    .stop()
    .then(() => pool.end())
    .then(() => process.exit(0));
});
