import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { StepRow } from '../../../src/db/types.js';
import { eventually, startTestApp, type TestApp } from '../../helpers/app.js';
import { backend, freshDatabase, seedDataDir, type TestDatabase } from '../../helpers/db.js';

/**
 * One process stopped in the middle of a pipeline and started again on the same database
 * (PGlite on disk, or Postgres): the new process skips the journalled stages, their results,
 * attempts and instants unchanged, and finishes the rest.
 */

const ALICE = { id: 'alice', admin: false };
const dir = backend === 'pglite' ? mkdtempSync(join(tmpdir(), 'taskhandle-steps-')) : undefined;
let database: TestDatabase | undefined;
const apps: TestApp[] = [];

// The first start is on a migrated database too: this is about the second, not initdb.
beforeAll(async () => {
  if (dir) await seedDataDir(dir);
});
afterAll(async () => {
  for (const app of apps) await app.stop().catch(() => {});
  await database?.drop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function start(): Promise<TestApp> {
  if (backend === 'pg') database ??= await freshDatabase();
  const app = await startTestApp({
    ...(dir ? { env: { DATA_DIR: dir } } : {}),
    ...(database ? { database } : {}),
  });
  apps.push(app);
  return app;
}

const journal = (app: TestApp, id: string): Promise<StepRow[]> =>
  app.app.db.kysely
    .selectFrom('task_steps')
    .selectAll()
    .where('task_id', '=', id)
    .where('state', '=', 'COMPLETED')
    .orderBy('position')
    .execute();

// Two starts of a process on a database on disk: tens of seconds on a loaded machine.
it('a process stopped mid-pipeline and started again skips what is journalled', {
  timeout: 120_000,
}, async () => {
  const first = await start();
  const { task } = await first.app.tasks.start(ALICE, {
    kind: 'pipeline',
    input: { stages: 6, stageMs: 300 },
  });
  await eventually(async () => ((await journal(first, task.id)).length >= 3 ? true : undefined));
  await first.app.stop();
  const second = await start();
  const before = await journal(second, task.id);
  expect(before.length).toBeGreaterThanOrEqual(3);

  const done = await eventually(async () => {
    const now = await second.app.tasks.get(ALICE, task.id);
    return now?.status === 'working' ? undefined : now;
  }, 60_000);
  expect(done?.status).toBe('completed');
  const after = await journal(second, task.id);
  expect(after.slice(0, before.length)).toEqual(before);
  const stages = (done!.result as { stages: unknown[] }).stages;
  expect(stages).toHaveLength(6);
  expect(stages.slice(0, before.length)).toEqual(before.map((s) => s.result));
  // Each ran once; the stage the stop interrupted ran again (its attempts say so).
  for (const step of before) expect(step.attempts).toBe(1);
});
