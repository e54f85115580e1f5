import { describe, expect, it } from 'vitest';
import { eventually } from '../../helpers/app.js';
import { backend } from '../../helpers/db.js';
import {
  alice,
  api,
  claimant,
  claimedBy,
  client,
  long,
  short,
  startServer,
  startTask,
  useProcessSuite,
} from '../../helpers/durable-process.js';
import { gqlAt, type ServerProcess } from '../../helpers/process.js';

/**
 * The journal across real server processes (ROLE=api + ROLE=worker on one Postgres): a
 * worker SIGKILLed in the middle of a pipeline, and a signal sent while its worker is dead.
 * The next worker skips what is journalled (results, attempt and instant unchanged) and never
 * runs a journalled step again. Postgres only: PGlite cannot be shared between processes.
 */

interface StepRow {
  name: string;
  state: string;
  attempts: number;
  ended_at: Date | null;
  result: { stage: number; attempt: number; at: string } | null;
}

const journal = async (id: string) =>
  (
    await client!.query<StepRow>(
      'select name, state, attempts, ended_at, result from task_steps where task_id = $1 order by position',
      [id],
    )
  ).rows;

const task = async (id: string) =>
  (
    await client!.query<{ status: string; result: any; attempt: number }>(
      'select status, result, attempt from tasks where id = $1',
      [id],
    )
  ).rows[0]!;

const finished = (id: string) =>
  eventually(async () => {
    const now = await task(id);
    return now.status === 'working' ? undefined : now;
  }, 30_000);

/** The (task, step) pairs a server's logs say it started. */
const started = (server: ServerProcess, id: string) =>
  server
    .logs()
    .filter((l) => l.msg === 'step started' && l.taskId === id)
    .map((l) => l.step as string);

// Server processes start in seconds on a busy machine, and a lost lease takes 1.5 s to lapse.
describe.skipIf(backend === 'pglite')('the journal across processes', { timeout: 90_000 }, () => {
  useProcessSuite();
  /** Two workers of the test's own, on the short lease (the test kills one). */
  const workers = () => Promise.all([startServer('worker', short), startServer('worker', short)]);

  it('a worker SIGKILLed mid-pipeline: the next skips the journalled stages and finishes the rest', async () => {
    const victim = await startServer('worker', short);
    const id = await startTask('pipeline', { stages: 6, stageMs: 300 });
    await claimedBy([victim], id, 1);
    // The next worker renews the long lease, so a stall of a busy machine cannot make it lose
    // the re-run too: the attempt that must not start a journalled stage is its, the second.
    const next = startServer('worker', long);
    const completed = async () => (await journal(id)).filter((s) => s.state === 'COMPLETED');
    await eventually(async () => ((await completed()).length >= 3 ? true : undefined));
    victim.child.kill('SIGKILL');
    await victim.exited;
    const survivor = await next;
    const before = await completed();
    expect(before.length).toBeGreaterThanOrEqual(3);

    const done = await finished(id);
    expect(done.status).toBe('completed');
    const after = await journal(id);
    // Journalled stages: the same rows, results and instants; run once, on attempt 1.
    for (const step of before) {
      expect(after.find((s) => s.name === step.name)).toEqual(step);
      expect(step).toMatchObject({ attempts: 1, result: { attempt: 1 } });
    }
    expect(done.result.stages.slice(0, before.length)).toEqual(before.map((s) => s.result));
    // The rest ran on the next worker's attempt, which never started a journalled stage.
    for (const stage of done.result.stages.slice(before.length)) expect(stage.attempt).toBe(2);
    const again = started(survivor, id).filter((name) => before.some((s) => s.name === name));
    expect(again).toEqual([]);
    expect(done.attempt).toBe(2);
  });

  it('never loses a signal sent while the worker holding the task is dead', async () => {
    const [w1, w2] = await workers();
    const id = await startTask('pipeline', { stages: 2, stageMs: 300, signal: 'go' });
    const victim = await eventually(async () => claimant([w1, w2], id, 1));
    await eventually(async () => ((await journal(id)).length >= 1 ? true : undefined));
    victim.child.kill('SIGKILL');
    const sent = await gqlAt(
      api.url,
      'mutation($id: ID!) { signalTask(id: $id, name: "go", payload: { n: 7 }) { id } }',
      { id },
      alice,
    );
    expect(sent.errors).toBeUndefined();
    const done = await finished(id);
    expect(done).toMatchObject({ status: 'completed', result: { signal: { n: 7 } } });
  });
});
