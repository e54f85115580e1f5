import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import { mintToken } from '../../src/auth/mint.js';
import { capturingLog, SECRET, startTestApp, type TestApp } from '../helpers/app.js';

let app: App;
let url: string;
const { log, lines } = capturingLog();

let t: TestApp | undefined;
beforeAll(async () => {
  t = await startTestApp({ log, env: { TASK_SHUTDOWN_GRACE_MS: '0' } });
  ({ app, url } = t);
});
afterAll(() => t?.stop());

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
