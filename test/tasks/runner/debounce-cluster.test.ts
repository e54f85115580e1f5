import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../../helpers/app.js';
import { type Cluster, spawnCluster } from '../../helpers/cluster.js';
import { backend } from '../../helpers/db.js';
import { gqlAt, type ServerProcess } from '../../helpers/process.js';

/**
 * DESIGN §17 debounce across processes: two servers that both serve and run tasks, on one
 * Postgres. The starts of a burst sent to both at once make one task; starts racing both
 * processes' claims either join a task before its claim or begin a new one, and every run
 * sees the input of the last start its task answered. `primes` echoes its input's `limit`.
 */

const START = `mutation($input: StartTaskInput!) { startTask(input: $input) { id version input } }`;

interface Answer {
  id: string;
  version: number;
  input: { limit: number };
}

describe.skipIf(backend !== 'pg')('debounce across processes', () => {
  let cluster: Cluster<[ServerProcess, ServerProcess]>;
  let db: pg.Client;
  let token: string;
  beforeAll(async () => {
    cluster = await spawnCluster(['all', 'all'] as const);
    db = new pg.Client({ connectionString: cluster.database.url as string });
    await db.connect();
    token = await cluster.token('alice');
  }, 120_000);
  afterAll(async () => {
    await db?.end();
    await cluster?.stop();
  });

  /** Starts `count` tasks of the burst `key` at once, alternately on each process. */
  async function burst(key: string, delayMs: number, count: number, from = 0): Promise<Answer[]> {
    const answers = await Promise.all(
      Array.from({ length: count }, (_, i) =>
        gqlAt(
          cluster.servers[i % 2]!.url,
          START,
          {
            input: {
              kind: 'primes',
              input: { limit: 1_000 + from + i },
              debounce: { key, delayMs },
            },
          },
          token,
        ),
      ),
    );
    for (const res of answers) expect(res.errors).toBeUndefined();
    return answers.map((res) => res.data.startTask as Answer);
  }

  /** The answer of the last start that changed each task: the highest version it answered. */
  function lastAnswers(answers: Answer[]): Map<string, Answer> {
    const last = new Map<string, Answer>();
    for (const answer of answers)
      if ((last.get(answer.id)?.version ?? 0) < answer.version) last.set(answer.id, answer);
    return last;
  }

  it('makes one task of forty starts sent to two processes at once', async () => {
    const answers = await burst('two-processes', 60_000, 40);
    expect(new Set(answers.map((a) => a.id)).size).toBe(1);
    expect(answers.map((a) => a.version).sort((a, b) => a - b)).toEqual(
      Array.from({ length: 40 }, (_, i) => i + 1),
    );
    const { rows } = await db.query(
      `select id, input, version from tasks where owner = 'alice' and debounce_key = 'two-processes'`,
    );
    expect(rows).toHaveLength(1);
    const [last] = lastAnswers(answers).values();
    expect(rows[0]).toMatchObject({ id: last!.id, input: last!.input, version: 40 });
  });

  it("runs each task with the last input it answered while both processes' claims race the starts", async () => {
    const answers: Answer[] = [];
    for (let wave = 0; wave < 10; wave++)
      answers.push(...(await burst('claim-race', 0, 6, wave * 6)));
    const last = lastAnswers(answers);
    const ids = [...last.keys()];
    const { rows } = await eventually(async () => {
      const read = await db.query<{ id: string; status: string; result: { limit: number } }>(
        `select id, status, result from tasks where id = any($1::uuid[])`,
        [ids],
      );
      return read.rows.every((row) => row.status === 'completed') ? read : undefined;
    }, 60_000);
    expect(rows).toHaveLength(ids.length);
    for (const row of rows) expect(row.result.limit).toBe(last.get(row.id)!.input.limit);
    const open = await db.query(`select id from tasks where debounce_key = 'claim-race'`);
    expect(open.rows).toHaveLength(0);
  });

  it('keeps one task of a burst whose starts were going to a process SIGKILLed in the middle', async () => {
    const [survivor, doomed] = cluster.servers;
    const start = (url: string, i: number) =>
      gqlAt(
        url,
        START,
        {
          input: {
            kind: 'primes',
            input: { limit: 5_000 + i },
            debounce: { key: 'killed', delayMs: 10_000 },
          },
        },
        token,
      ).then(
        (res) => (res.errors ? undefined : (res.data.startTask as Answer)),
        () => undefined, // the connection died with the process: not acknowledged
      );
    // Twenty starts on each process at once; the second is killed while they are in flight.
    const inFlight = Array.from({ length: 40 }, (_, i) =>
      start((i % 2 === 0 ? survivor : doomed)!.url, i),
    );
    await doomed!.stop('SIGKILL');
    const first = await Promise.all(inFlight);
    // The rest of the burst goes to the survivor.
    const rest = await Promise.all(
      Array.from({ length: 10 }, (_, i) => start(survivor!.url, 40 + i)),
    );
    const acknowledged = [...first, ...rest].filter((a): a is Answer => a !== undefined);
    expect(rest.every((a) => a !== undefined)).toBe(true);
    expect(new Set(acknowledged.map((a) => a.id)).size).toBe(1);
    const id = acknowledged[0]!.id;
    // Once the burst is quiet, the survivor runs its one task, with the last input it took.
    const { rows } = await eventually(async () => {
      const read = await db.query<{
        id: string;
        status: string;
        version: number;
        result: { limit: number };
      }>(
        `select id, status, version, result from tasks where owner = 'alice' and kind = 'primes'
           and (debounce_key = 'killed' or id = $1::uuid)`,
        [id],
      );
      return read.rows.every((row) => row.status === 'completed') ? read : undefined;
    }, 60_000);
    expect(rows.map((row) => row.id)).toEqual([id]);
    // The last answered start (the highest version answered) is the input the task ran with:
    // the survivor's starts came after every start the dead process could have stored.
    const last = [...acknowledged].sort((a, b) => b.version - a.version)[0]!;
    expect(last.input.limit).toBeGreaterThanOrEqual(5_040);
    expect(rows[0]!.result.limit).toBe(last.input.limit);
  });
});
