import { describe, expect, it } from 'vitest';
import { describeTask } from '../../src/cli/format.js';
import { runCli } from '../helpers/cli.js';
import { alice, t, useFileApp } from '../helpers/file-app.js';

/** The CLI's flags for managing the work (DESIGN §14), run as a real process. */

useFileApp();

const cli = (args: string[]) =>
  runCli(args, { env: { TASKHANDLE_URL: t.url, TASKHANDLE_TOKEN: alice } });

describe('taskhandle start with schedule, priority, key and attempts', () => {
  it('passes --delay, --priority, --concurrency-key and --max-attempts to the task', async () => {
    const { code, stdout } = await cli([
      'start',
      'sleep',
      '{"ms":0}',
      '--delay',
      '3600000',
      '--priority',
      '-5',
      '--concurrency-key',
      'acct-7',
      '--max-attempts',
      '2',
    ]);
    expect(code).toBe(0);
    const task = JSON.parse(stdout.trim());
    expect(task).toMatchObject({ status: 'WORKING', attempt: 0, maxAttempts: 2 });
    expect(Date.parse(task.runAt)).toBeGreaterThan(Date.parse(task.createdAt));
    const full = await t.app.tasks.get({ id: 'alice', admin: false }, task.id);
    expect(full).toMatchObject({ priority: -5, concurrencyKey: 'acct-7', maxAttempts: 2 });
    expect(describeTask(task)).toContain('waiting:  until');
  });

  it('--run-at past expiry is refused with the field named', async () => {
    const { code, stderr } = await cli([
      'start',
      'sleep',
      '{"ms":0}',
      '--run-at',
      '2999-01-01T00:00:00Z',
    ]);
    expect(code).not.toBe(0);
    expect(stderr).toContain('runAt');
  });

  it('describes a task between attempts: attempt n of m, the next one and the last error', () => {
    const soon = new Date(Date.now() + 90_000).toISOString();
    const text = describeTask({
      id: 'x',
      kind: 'sleep',
      status: 'WORKING',
      statusMessage: null,
      progress: null,
      createdAt: new Date().toISOString(),
      lastUpdatedAt: new Date().toISOString(),
      ttlMs: 3_600_000,
      pollIntervalMs: 1_000,
      input: {},
      expiresAt: new Date(Date.now() + 3_600_000).toISOString(),
      version: 3,
      result: null,
      error: null,
      inputRequest: null,
      inputRequests: [],
      attempt: 2,
      maxAttempts: 3,
      runAt: soon,
      lastError: { code: 'HANDLER_ERROR', message: 'boom' },
      labels: {},
      parentId: null,
    });
    expect(text).toContain('attempt:  2 of 3');
    expect(text).toContain('next:     attempt 3 in 1m');
    expect(text).toContain('last error: HANDLER_ERROR boom');
  });
});
