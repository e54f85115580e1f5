import { Writable } from 'node:stream';
import { sql } from 'kysely';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type App, createApp } from '../../src/app.js';
import { mintToken } from '../../src/auth/mint.js';
import { loadConfig } from '../../src/config/config.js';
import { SECRET } from '../helpers/app.js';
import { freshDatabase, type TestDatabase } from '../helpers/db.js';

let app: App;
let url: string;
let database: TestDatabase;
const lines: Array<Record<string, any>> = [];

beforeAll(async () => {
  database = await freshDatabase();
  const sink = new Writable({
    write(chunk, _enc, done) {
      for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line));
      done();
    },
  });
  const config = loadConfig({
    NODE_ENV: 'test',
    AUTH_JWT_SECRET: SECRET,
    PORT: '0',
    DATA_DIR: 'memory://',
    TASK_SHUTDOWN_GRACE_MS: '0',
    ...(database.url ? { DATABASE_URL: database.url } : {}),
  });
  app = await createApp({ config, log: pino({ level: 'info' }, sink) });
  url = await app.listen();
});
afterAll(async () => {
  await app?.stop();
  await database?.drop();
});

describe('unexpected failures', () => {
  it('are masked for the client and logged with their cause', async () => {
    const token = await mintToken(SECRET, { sub: 'alice', scopes: ['tasks:read', 'tasks:write'] });
    // Break the store under the running server: every task query now fails in Postgres.
    await sql`alter table tasks rename to tasks_gone`.execute(app.db.kysely);
    try {
      const res = await fetch(`${url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
        body: JSON.stringify({
          query: '{ task(id: "00000000-0000-4000-8000-000000000000") { id } }',
        }),
      });
      const body = (await res.json()) as {
        errors: Array<{ message: string; extensions: Record<string, unknown> }>;
      };
      expect(body.errors[0]?.message).toBe('Unexpected error.');
      expect(body.errors[0]?.extensions.code).toBe('INTERNAL_SERVER_ERROR');
      expect(JSON.stringify(body)).not.toMatch(/tasks/);
      const logged = lines.find((l) => l.level === 50 && /tasks/.test(JSON.stringify(l.err ?? {})));
      expect(logged, 'the cause is logged').toBeDefined();

      const rest = await fetch(`${url}/v1/jobs/00000000-0000-4000-8000-000000000000`, {
        headers: { authorization: `Bearer ${token}` },
      });
      expect(rest.status).toBe(500);
      expect(await rest.json()).toMatchObject({
        status: 500,
        code: 'INTERNAL_SERVER_ERROR',
        detail: 'Unexpected error.',
      });
    } finally {
      await sql`alter table tasks_gone rename to tasks`.execute(app.db.kysely);
    }
  });

  it('expected failures keep their message and code and are not logged as errors', async () => {
    const token = await mintToken(SECRET, { sub: 'alice', scopes: ['tasks:read', 'tasks:write'] });
    const errorsBefore = lines.filter((l) => l.level >= 50).length;
    const res = await fetch(`${url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({
        query: 'mutation { cancelTask(id: "00000000-0000-4000-8000-000000000000") { id } }',
      }),
    });
    const body = (await res.json()) as {
      errors: Array<{ message: string; extensions: Record<string, unknown> }>;
    };
    expect(body.errors[0]).toMatchObject({
      message: 'Task not found.',
      extensions: { code: 'NOT_FOUND' },
    });
    expect(lines.filter((l) => l.level >= 50).length).toBe(errorsBefore);
  });
});
