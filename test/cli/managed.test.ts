import { describe, expect, it } from 'vitest';
import { describeTask } from '../../src/cli/format.js';
import { eventually } from '../helpers/app.js';
import { runCli } from '../helpers/cli.js';
import { alice, t, useFileApp } from '../helpers/file-app.js';

/** The CLI's flags for managing the work (DESIGN §14, §17), run as a real process. */

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

  it('passes --rate-limit-key and --rate-limit, and shows why a task is held', async () => {
    const start = (key: string) =>
      cli(['start', 'sleep', '{"ms":60000}', '--rate-limit-key', key, '--rate-limit', '1/3600000']);
    const first = JSON.parse((await start('api-cli')).stdout.trim());
    expect(first).toMatchObject({
      rateLimitKey: 'api-cli',
      rateLimit: { limit: 1, periodMs: 3_600_000 },
    });
    const second = JSON.parse((await start('api-cli')).stdout.trim());
    // The second start of the hour waits, held by its key, and says until when.
    const { stdout } = await eventually(async () => {
      const got = await cli(['get', second.id, '--json']);
      return JSON.parse(got.stdout).heldBecause === 'RATE_LIMIT' ? got : undefined;
    });
    const held = JSON.parse(stdout);
    expect(held.statusMessage).toMatch(/^Rate limited: next start at \d{4}-/);
    expect(describeTask(held)).toContain('held:     by its rate limit key');
    await cli(['cancel', first.id]);
    await cli(['cancel', second.id]);
  });

  it('refuses a --rate-limit that is not LIMIT/PERIOD_MS, and one out of range by name', async () => {
    const bad = await cli(['start', 'sleep', '{"ms":0}', '--rate-limit', 'often']);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain('--rate-limit must be LIMIT/PERIOD_MS');
    const range = await cli(['start', 'sleep', '{"ms":0}', '--rate-limit', '0/1000']);
    expect(range.code).not.toBe(0);
    expect(range.stderr).toContain('rateLimit.limit must be an integer from 1 to 1000');
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
      heldBecause: null,
      rateLimitKey: null,
      rateLimit: null,
      labels: {},
      parentId: null,
    });
    expect(text).toContain('attempt:  2 of 3');
    expect(text).toContain('next:     attempt 3 in 1m');
    expect(text).toContain('last error: HANDLER_ERROR boom');
  });
});
