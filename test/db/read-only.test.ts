import { EventEmitter, once } from 'node:events';
import { Writable } from 'node:stream';
import { sql } from 'kysely';
import pg from 'pg';
import pino from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { connect, type Db } from '../../src/db/connect.js';
import { DatabaseUnavailable, faultClassifier, isReadOnlyFault } from '../../src/db/faults.js';
import { PgListener } from '../../src/db/listen.js';
import { guardedPool } from '../../src/db/pg-pool.js';
import { ensureWritable, ReadOnlyServer, ReportingClient } from '../../src/db/writable.js';
import { directUrl, onDatabaseOf } from '../helpers/database-env.js';
import { backend, freshDatabase, type TestDatabase } from '../helpers/db.js';

/**
 * A server that does not take writes (a standby behind the database's name during a failover)
 * is a database fault: SERVICE_UNAVAILABLE, counted by the breaker, its connections dropped.
 * Real refusals from Postgres; a standby itself is in test/db/failover-*.test.ts. Postgres
 * only: PGlite is never read-only.
 */

const timeouts = { statementTimeoutMs: 5_000, connectTimeoutMs: 5_000 };
const silent = pino({ level: 'silent' });

/** A logger whose lines are kept, parsed, with an event per line. */
function recordingLog() {
  const lines: Array<Record<string, any>> = [];
  const written = new EventEmitter();
  const stream = new Writable({
    write(chunk, _encoding, done) {
      lines.push(JSON.parse(String(chunk)));
      written.emit('line');
      done();
    },
  });
  const log = pino({ level: 'info' }, stream);
  /** Resolves once `msg` was logged; rejects after 20 s. */
  const until = async (msg: string) => {
    const signal = AbortSignal.timeout(20_000);
    while (!lines.some((l) => l.msg === msg))
      await once(written, 'line', { signal }).catch(() => {
        throw new Error(`not logged within 20 s: ${msg}`);
      });
  };
  return { log, lines, until };
}

let database: TestDatabase;
/** The server's pool of `max` connections on the test's database. */
const poolOf = (max: number) =>
  guardedPool(url, { ...timeouts, max, preparedStatements: true, log: silent }).pool;
/**
 * The test's database on the server itself, also when the run goes through a pooler: a
 * pooler's server connections would outlive the session defaults these tests change.
 */
let url: string;
let admin: pg.Client;
const dbName = () => new URL(url).pathname.slice(1);
/** New sessions on the test's database start read-only (`default_transaction_read_only`). */
const readOnlyFromNowOn = (on: boolean) =>
  admin.query(
    on
      ? `alter database ${dbName()} set default_transaction_read_only = on`
      : `alter database ${dbName()} reset default_transaction_read_only`,
  );

describe.skipIf(backend === 'pglite')('a server that does not take writes', () => {
  beforeAll(async () => {
    database = await freshDatabase();
    url = onDatabaseOf(directUrl()!, database.url!);
    admin = new pg.Client({ connectionString: url });
    await admin.connect();
  });
  afterAll(async () => {
    await admin?.end();
    await database?.drop();
  });
  afterEach(() => readOnlyFromNowOn(false));

  it('answers a read-only refusal (25006), and what its transaction refuses after it (25P02), as SERVICE_UNAVAILABLE', async () => {
    const pool = poolOf(2);
    try {
      const client = await pool.connect();
      await client.query('begin', []);
      await client.query('set transaction read only', []);
      const refusal = await client.query('create table written (x int)', []).catch((e) => e);
      expect(refusal).toBeInstanceOf(DatabaseUnavailable);
      expect(refusal).toMatchObject({ code: 'SERVICE_UNAVAILABLE' });
      expect(refusal.cause).toMatchObject({ code: '25006' });
      // The aborted transaction's next statement fails for the same reason, not a new one.
      const after = await client.query('select 1', []).catch((e) => e);
      expect(after).toBeInstanceOf(DatabaseUnavailable);
      expect(after.cause).toBe(refusal.cause);
      client.release();
    } finally {
      await pool.end();
    }
  });

  it('drops a connection that met a refusal instead of reusing it', async () => {
    const pool = poolOf(1);
    const pid = async (client: Awaited<ReturnType<typeof pool.connect>>) =>
      (await client.query('select pg_backend_pid() as pid', [])).rows[0] as { pid: number };
    try {
      // A session that turned read-only after it opened (its server became one).
      const first = await pool.connect();
      const { pid: before } = await pid(first);
      await first.query('set default_transaction_read_only = on', []);
      await expect(first.query('create temp table t (x int)', [])).rejects.toBeInstanceOf(
        DatabaseUnavailable,
      );
      first.release();

      const next = await pool.connect();
      expect((await pid(next)).pid).not.toBe(before);
      await next.query('create temp table t (x int)', []);
      next.release();
    } finally {
      await pool.end();
    }
  });

  it('never uses a new connection that reached a read-only server', async () => {
    await readOnlyFromNowOn(true);
    const pool = poolOf(2);
    try {
      const refusal = await pool.connect().catch((e) => e);
      expect(refusal).toBeInstanceOf(DatabaseUnavailable);
      expect(refusal.cause).toBeInstanceOf(ReadOnlyServer);
      expect(refusal.cause.message).toContain('transaction_read_only = on');
      await readOnlyFromNowOn(false);
      const client = await pool.connect();
      await client.query('create temp table t (x int)', []);
      client.release();
    } finally {
      await pool.end();
    }
  });

  it('asks the server when its report says read-only: a pooler may replay a stale one', async () => {
    const client = new ReportingClient({ connectionString: url });
    await client.connect();
    try {
      expect(client.reported.get('in_hot_standby')).toBe('off');
      await ensureWritable(client);
      // What PgBouncer replays after a failover: the first server connection's report.
      client.reported.set('in_hot_standby', 'on');
      await ensureWritable(client);
      await client.query('set default_transaction_read_only = on');
      await expect(ensureWritable(client)).rejects.toBeInstanceOf(ReadOnlyServer);
    } finally {
      await client.end();
    }
  });

  it('asks the server when it reported nothing (an older server, a pooler)', async () => {
    await readOnlyFromNowOn(true);
    // A plain pg client keeps no ParameterStatus: the check asks `transaction_read_only`.
    const plain = new pg.Client({ connectionString: url });
    await plain.connect();
    try {
      await expect(ensureWritable(plain)).rejects.toThrow('transaction_read_only = on');
      await plain.query('set default_transaction_read_only = off');
      await ensureWritable(plain);
    } finally {
      await plain.end();
    }
  });

  it('classifies real refusals and passes other errors unchanged', async () => {
    const refusal = await admin
      .query('begin read only; create table written (x int)')
      .catch((e) => e);
    await admin.query('rollback');
    expect(isReadOnlyFault(refusal)).toBe(true);
    expect(faultClassifier(silent)(refusal)).toBeInstanceOf(DatabaseUnavailable);
    const other = await admin.query('select 1 / 0').catch((e) => e);
    expect(isReadOnlyFault(other)).toBe(false);
    expect(faultClassifier(silent)(other)).toBe(other);
  });

  describe('the breaker', () => {
    let db: Db | undefined;
    afterEach(() => db?.close());

    it('opens on a read-only server, logging the episode once, and closes by itself when it takes writes again', async () => {
      const { log, lines, until } = recordingLog();
      db = await connect({ databaseUrl: url, dataDir: '', timeouts, log });
      await readOnlyFromNowOn(true);
      // The connection it opens is refused; a probe on a new one finds the server read-only.
      const write = sql`create temp table t (x int)`.execute(db.kysely);
      await expect(write).rejects.toBeInstanceOf(DatabaseUnavailable);
      await until(
        'database read-only (a standby, or a failover under way): failing requests at once until a writable primary answers',
      );
      // Open: reads fail too, without a connection (none would be admitted).
      for (let i = 0; i < 20; i++)
        await expect(sql`select 1`.execute(db.kysely)).rejects.toBeInstanceOf(DatabaseUnavailable);
      await readOnlyFromNowOn(false);
      await until('database writable again');
      await sql`create temp table t (x int)`.execute(db.kysely);
      // One line opened the episode, one closed it; the refusals were logged at most once a second.
      const episode = lines.filter((l) => /^database (read-only|writable)/.test(l.msg));
      expect(episode).toHaveLength(2);
      expect(lines.filter((l) => l.msg === 'database unavailable').length).toBeLessThanOrEqual(2);
    });
  });

  it('listens on a writable server only, and is back once the server takes writes', async () => {
    const { log, lines, until } = recordingLog();
    const listener = new PgListener(url, log, { timeouts, backoffMs: [20, 200] });
    const events = new EventEmitter();
    await listener.start(['read_only_test'], {
      notify: (_channel, payload) => events.emit('notify', payload),
      reconnected: () => events.emit('reconnected'),
    });
    try {
      await readOnlyFromNowOn(true);
      await admin.query(
        `select pg_terminate_backend(pid) from pg_stat_activity
         where datname = current_database() and query like 'listen %'`,
      );
      // It does not settle for the read-only server: it keeps trying until it is writable.
      await until('listening connection could not be restored; retrying');
      expect(
        lines.find((l) => l.msg === 'listening connection could not be restored; retrying')?.err
          .message,
      ).toContain('transaction_read_only = on');
      const back = once(events, 'reconnected');
      await readOnlyFromNowOn(false);
      await back;
      const heard = once(events, 'notify');
      await admin.query(`select pg_notify('read_only_test', 'hello')`);
      expect(await heard).toEqual(['hello']);
    } finally {
      await listener.stop();
    }
  });

  it('reconnects at once when told the database is back, instead of waiting out its backoff', async () => {
    const { log, until } = recordingLog();
    // Ten minutes: only `retryNow` can bring it back within the test.
    const listener = new PgListener(url, log, {
      timeouts,
      backoffMs: [600_000, 600_000],
    });
    const events = new EventEmitter();
    await listener.start(['read_only_test'], {
      notify: () => {},
      reconnected: () => events.emit('reconnected'),
    });
    try {
      await admin.query(
        `select pg_terminate_backend(pid) from pg_stat_activity
         where datname = current_database() and query like 'listen %'`,
      );
      await until('listening connection lost; reconnecting');
      const back = once(events, 'reconnected');
      listener.retryNow();
      await back;
    } finally {
      await listener.stop();
    }
  });
});
