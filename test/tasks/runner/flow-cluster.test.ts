import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../../helpers/app.js';
import { type FixtureServer, spawnFixtureServer } from '../../helpers/cluster.js';
import { backend, freshDatabase, type TestDatabase } from '../../helpers/db.js';
import { FIRST_CLAIMS_DDL, FIRST_CLAIMS_OF, mostInAnyWindow } from '../../helpers/first-claims.js';
import { gqlAt } from '../../helpers/process.js';
import { readWriteToken } from '../../helpers/secret.js';

/**
 * The rate limit per key (DESIGN §17) across real, separate server processes claiming from one
 * Postgres database at once, one of them killed mid-way (PGlite cannot be shared between
 * processes, so this file runs on Postgres only). Every first claim is logged by a trigger at
 * its transaction's instant, the instant the limit counts.
 */

const START = `mutation($input: StartTaskInput!) { startTask(input: $input) { id } }`;
const LIMIT = 3;
const PERIOD_MS = 600;

describe.runIf(backend === 'pg')(
  'rate limit per key across processes',
  { timeout: 120_000 },
  () => {
    let database: TestDatabase;
    let client: pg.Client;
    let token: string;
    const servers: FixtureServer[] = [];

    async function spawn(): Promise<FixtureServer> {
      const server = await spawnFixtureServer(
        'test/helpers/work-server.ts',
        'work server listening',
        database.url!,
        { RUNNER_CONCURRENCY: '4', TASK_LEASE_MS: '2000' },
      );
      servers.push(server);
      return server;
    }

    async function firstClaims(key: string): Promise<Array<{ task_id: string; at: Date }>> {
      return (await client.query(FIRST_CLAIMS_OF, [key])).rows;
    }

    beforeAll(async () => {
      database = await freshDatabase();
      client = new pg.Client({ connectionString: database.url });
      await client.connect();
      await client.query(`create table test_spans (
      task_id uuid, key text, pid int, attempt int, started_at timestamptz, ended_at timestamptz)`);
      for (const ddl of FIRST_CLAIMS_DDL) await client.query(ddl);
      token = await readWriteToken();
      await Promise.all([spawn(), spawn(), spawn()]);
    }, 180_000);
    afterAll(async () => {
      for (const s of servers) if (s.node.child.exitCode === null) s.node.child.kill('SIGKILL');
      await Promise.all(servers.map((s) => s.node.exited));
      await client?.end();
      await database?.drop();
    });

    it('never starts more than the limit in any window, with a process killed, and loses no task', async () => {
      const jobs = [
        ...Array.from({ length: 24 }, () => 'shared'),
        ...Array.from({ length: 6 }, () => 'other'),
      ];
      const ids = await Promise.all(
        jobs.map(async (key, i) => {
          const res = await gqlAt(
            servers[i % 3]!.url,
            START,
            {
              input: {
                kind: 'span',
                input: { key, ms: 100 },
                rateLimitKey: key,
                rateLimit: { limit: LIMIT, periodMs: PERIOD_MS },
              },
            },
            token,
          );
          expect(res.errors).toBeUndefined();
          return res.data.startTask.id as string;
        }),
      );
      // Chaos: once a third of the busy key has started, one process dies with its tasks.
      await eventually(async () => ((await firstClaims('shared')).length >= 8 ? true : undefined));
      const victim = servers[1]!;
      victim.node.child.kill('SIGKILL');
      await victim.node.exited;

      const spans = await eventually(async () => {
        const { rows } = await client.query<{ task_id: string; pid: number }>(
          'select distinct task_id, pid from test_spans where ended_at is not null',
        );
        return new Set(rows.map((r) => r.task_id)).size === ids.length ? rows : undefined;
      }, 90_000);
      expect(new Set(spans.map((s) => s.pid)).size).toBeGreaterThan(1);
      for (const [key, count] of [
        ['shared', 24],
        ['other', 6],
      ] as const) {
        const claims = await firstClaims(key);
        // Each task started once; a task the dead process held ran again uncounted.
        expect(new Set(claims.map((c) => c.task_id)).size).toBe(count);
        expect(claims).toHaveLength(count);
        expect(
          mostInAnyWindow(
            claims.map((c) => c.at.getTime()),
            PERIOD_MS,
          ),
        ).toBe(LIMIT);
      }
      // The busy key held the other back no more than its own limit did: the other key's tasks
      // all started before the busy key's backlog was through.
      const lastShared = Math.max(...(await firstClaims('shared')).map((c) => c.at.getTime()));
      for (const c of await firstClaims('other')) expect(c.at.getTime()).toBeLessThan(lastShared);
    });
  },
);
