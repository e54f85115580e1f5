import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../../helpers/app.js';
import { type FixtureServer, spawnFixtureServer } from '../../helpers/cluster.js';
import { backend, freshDatabaseAndClient, type TestDatabase } from '../../helpers/db.js';
import { gqlAt } from '../../helpers/process.js';
import { readWriteToken } from '../../helpers/secret.js';

/**
 * A task with several questions outstanding across real server processes sharing one Postgres
 * database (DESIGN §4 "Human in the loop", "Execution"): the worker that asked is killed with
 * SIGKILL after one answer was stored; the answer survives it, and once the last question is
 * answered through another process, a worker there re-runs the task, which gets both answers
 * at once. PGlite cannot be shared between processes, so this file runs on Postgres only.
 */

const START = `mutation($input: StartTaskInput!) { startTask(input: $input) { id } }`;
const ANSWER = `mutation($id: ID!, $key: String!, $value: JSON!) { provideTaskInput(id: $id, key: $key, value: $value) { status inputRequests { key } } }`;

describe.runIf(backend === 'pg')('several questions across processes', { timeout: 60_000 }, () => {
  let database: TestDatabase;
  let client: pg.Client;
  let token: string;
  const servers: FixtureServer[] = [];

  async function spawn(): Promise<FixtureServer> {
    const server = await spawnFixtureServer(
      'test/helpers/questions-server.ts',
      'questions server listening',
      database.url!,
      { TASK_LEASE_MS: '1500' },
    );
    servers.push(server);
    return server;
  }

  const row = async (id: string) =>
    (
      await client.query<{ status: string; answers: unknown; worker_id: string | null }>(
        'select status, answers, worker_id, attempt, result from tasks where id = $1',
        [id],
      )
    ).rows[0]!;

  beforeAll(async () => {
    ({ database, client } = await freshDatabaseAndClient());
    token = await readWriteToken();
  });
  afterAll(async () => {
    for (const server of servers) server.node.child.kill('SIGKILL');
    await Promise.all(servers.map((server) => server.node.exited));
    await client?.end();
    await database?.drop();
  });

  it('keeps the answer stored before the asking worker was killed, and resumes with both on another', async () => {
    const first = await spawn();
    const started = await gqlAt(first.url, START, { input: { kind: 'survey', input: {} } }, token);
    expect(started.errors).toBeUndefined();
    const id: string = started.data.startTask.id;
    await eventually(async () => (await row(id)).status === 'input_required' || undefined);

    const partial = await gqlAt(
      first.url,
      ANSWER,
      { id, key: 'name', value: { name: 'Ada' } },
      token,
    );
    expect(partial.data.provideTaskInput).toEqual({
      status: 'INPUT_REQUIRED',
      inputRequests: [{ key: 'age' }],
    });

    first.node.child.kill('SIGKILL');
    expect((await first.node.exited).signal).toBe('SIGKILL');
    expect(await row(id)).toMatchObject({
      status: 'input_required',
      answers: { name: { name: 'Ada' } },
    });

    const second = await spawn();
    const answeredAt = Date.now();
    const last = await gqlAt(second.url, ANSWER, { id, key: 'age', value: { n: 36 } }, token);
    expect(last.data.provideTaskInput).toEqual({ status: 'WORKING', inputRequests: [] });
    const done = await eventually(async () => {
      const now = await row(id);
      return now.status === 'completed' || now.status === 'failed' ? now : undefined;
    }, 20_000);
    console.log(
      `[questions] last answer → COMPLETED on another process in ${Date.now() - answeredAt} ms`,
    );
    expect(done).toMatchObject({
      status: 'completed',
      result: { name: 'Ada', age: 36, attempt: 2, pid: second.pid },
    });
  });
});
