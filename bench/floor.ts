import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import pg from 'pg';

/**
 * The floor: a bare node:http server doing the same SQL as the service (the same insert and
 * notify as `insertTask`, the same select as `findVisibleTask`) with no framework, no GraphQL, no auth.
 */
export const INSERT_SQL = `
  with t as (
    insert into tasks (id, owner, kind, input, ttl_ms, created_at, last_updated_at, expires_at,
                       poll_interval_ms, idempotency_key, max_attempts, timeout_ms)
    select $1::uuid, $2, $3, $4::jsonb, $5::int, c.at, c.at, c.at + $5::int * interval '1 millisecond',
           $6::int, null, $7::int, $8::int
    from (select date_trunc('milliseconds', now()) as at) c
    on conflict (owner, idempotency_key) where idempotency_key is not null do nothing
    returning *
  )
  select t.*, pg_notify('taskhandle_ready', t.kind) as notified from t`;
export const SELECT_SQL = `select * from tasks where id = $1 and owner = $2 and expires_at > now()`;
/** The batch floor: the same insert and notify for many rows, in one statement (one array a column). */
export const INSERT_MANY_SQL = `
  with t as (
    insert into tasks (id, owner, kind, input, ttl_ms, created_at, last_updated_at, expires_at,
                       poll_interval_ms, idempotency_key, max_attempts, timeout_ms)
    select r.id, $2, r.kind, r.input, $5::int, c.at, c.at, c.at + $5::int * interval '1 millisecond',
           $6::int, null, $7::int, $8::int
    from unnest($1::uuid[], $3::text[], $4::jsonb[]) with ordinality as r(id, kind, input, n),
         (select date_trunc('milliseconds', now()) as at) c
    order by r.n
    on conflict (owner, idempotency_key) where idempotency_key is not null do nothing
    returning *
  )
  select t.*, pg_notify('taskhandle_ready', t.kind) as notified from t`;

export function insertParams(owner: string, kind: string, input: unknown): unknown[] {
  return [randomUUID(), owner, kind, JSON.stringify(input), 3_600_000, 1_000, 3, 3_700_000];
}

export function insertManyParams(
  owner: string,
  entries: ReadonlyArray<{ kind: string; input: unknown }>,
): unknown[] {
  return [
    entries.map(() => randomUUID()),
    owner,
    entries.map((e) => e.kind),
    entries.map((e) => JSON.stringify(e.input)),
    3_600_000,
    1_000,
    3,
    3_700_000,
  ];
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10 });
  const server = createServer((req, res) => {
    const send = (status: number, body: unknown) => {
      const text = JSON.stringify(body);
      res.writeHead(status, {
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(text),
      });
      res.end(text);
    };
    const url = new URL(req.url ?? '/', 'http://floor');
    if (req.method === 'POST' && url.pathname === '/accept') {
      let body = '';
      req.setEncoding('utf8');
      req.on('data', (chunk: string) => (body += chunk));
      req.on('end', () => {
        const { kind, input } = JSON.parse(body) as { kind: string; input: unknown };
        pool.query(INSERT_SQL, insertParams('alice', kind, input)).then(
          (result) => send(200, result.rows[0]),
          (err: Error) => send(500, { error: err.message }),
        );
      });
      return;
    }
    if (req.method === 'POST' && url.pathname === '/accept-many') {
      let body = '';
      req.setEncoding('utf8');
      req.on('data', (chunk: string) => (body += chunk));
      req.on('end', () => {
        const { inputs } = JSON.parse(body) as {
          inputs: Array<{ kind: string; input: unknown }>;
        };
        pool.query(INSERT_MANY_SQL, insertManyParams('alice', inputs)).then(
          (result) => send(200, result.rows),
          (err: Error) => send(500, { error: err.message }),
        );
      });
      return;
    }
    if (url.pathname === '/poll') {
      pool.query(SELECT_SQL, [url.searchParams.get('id'), 'alice']).then(
        (result) => send(result.rows[0] ? 200 : 404, result.rows[0] ?? null),
        (err: Error) => send(500, { error: err.message }),
      );
      return;
    }
    send(404, null);
  });
  server.keepAliveTimeout = 5_000;
  server.listen(0, '127.0.0.1', () => {
    const address = server.address() as { port: number };
    process.send!({ type: 'listening', url: `http://127.0.0.1:${address.port}` });
  });
  process.on('message', (message: { type: string }) => {
    if (message.type === 'cpu') process.send!({ type: 'cpu', ...process.cpuUsage() });
  });
  process.on('SIGTERM', () => {
    server.close();
    server.closeAllConnections();
    void pool.end().then(() => process.exit(0));
  });
}
