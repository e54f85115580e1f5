import pg from 'pg';

/**
 * Whether a connection reached a server that takes writes: what libpq's
 * `target_session_attrs=read-write` checks and node-postgres does not. Behind a name that a
 * failover moves (a DNS name, a virtual IP), a new connection may reach a standby not yet
 * promoted, or a former primary come back as one; there every write, and LISTEN, is refused.
 */

/** SQLSTATE of a write, LISTEN or NOTIFY refused by a read-only server or transaction. */
export const READ_ONLY_SQL_TRANSACTION = '25006';

/** A connection found on a server that does not take writes; it is not used. */
export class ReadOnlyServer extends Error {
  constructor(why: string) {
    super(`connected to a server that does not take writes (${why})`);
    this.name = 'ReadOnlyServer';
  }
}

/**
 * A pg client that keeps the parameters the server reports (ParameterStatus): at the start of
 * every session, and on change for the GUC_REPORT ones, which from Postgres 14 include
 * `in_hot_standby` and `default_transaction_read_only`.
 */
export class ReportingClient extends pg.Client {
  readonly reported = new Map<string, string>();

  constructor(config?: string | pg.ClientConfig) {
    super(config);
    this.connection.on(
      'parameterStatus',
      (msg: { parameterName: string; parameterValue: string }) =>
        this.reported.set(msg.parameterName, msg.parameterValue),
    );
  }
}

/**
 * Rejects with ReadOnlyServer unless the server this newly opened connection reached takes
 * writes. When the server reported `in_hot_standby` and `default_transaction_read_only` both
 * `off` as the session opened (Postgres 14 and later), that is trusted, at no cost, as libpq
 * does; otherwise `SHOW transaction_read_only` decides, one round trip. Asking also when the
 * report says read-only matters behind a pooler: PgBouncer replays to every client the report
 * of the first server connection it opened to the database, which a failover makes stale,
 * and a stale "read-only" must not refuse a writable primary for good. (A stale "writable"
 * costs less: the first refusal drops the connection, and the breaker's probe asks.) Only at
 * the start of a session: a promotion changes what a session reports at its next statement.
 */
export async function ensureWritable(client: pg.ClientBase): Promise<void> {
  const reported = client instanceof ReportingClient ? client.reported : undefined;
  if (
    reported?.get('in_hot_standby') === 'off' &&
    reported.get('default_transaction_read_only') === 'off'
  )
    return;
  await ensureWritableNow(client);
}

/** Rejects with ReadOnlyServer unless `SHOW transaction_read_only` answers `off` now. */
export async function ensureWritableNow(client: pg.ClientBase): Promise<void> {
  const { rows } = await client.query<{ transaction_read_only: string }>(
    'show transaction_read_only',
  );
  if (rows[0]?.transaction_read_only !== 'off')
    throw new ReadOnlyServer('transaction_read_only = on');
}
