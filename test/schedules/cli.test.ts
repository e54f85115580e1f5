import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { runCli } from '../helpers/cli.js';
import { ManualClock } from '../helpers/manual-clock.js';

/** `taskhandle schedule set|ls|rm|pause|resume|run`, run as a real process over the client. */

describe('taskhandle schedule', () => {
  let t: TestApp;
  let empty: string;
  const clock = new ManualClock(Date.parse('2026-05-04T10:00:30Z'));

  const cli = async (args: string[]) =>
    runCli(['schedule', ...args], {
      cwd: empty,
      env: { DATA_DIR: empty, TASKHANDLE_URL: t.url, TASKHANDLE_TOKEN: await t.token('alice') },
    });
  const json = (stdout: string) => JSON.parse(stdout.trim().split('\n').at(-1)!);

  beforeAll(async () => {
    t = await startTestApp({ scheduleClock: clock });
    empty = mkdtempSync(join(tmpdir(), 'taskhandle-cli-'));
  });
  afterAll(async () => {
    await t?.stop();
    rmSync(empty, { recursive: true, force: true });
  });

  it('sets, lists, pauses, resumes, runs and removes a schedule', async () => {
    const set = await cli([
      'set',
      'nightly',
      '30 2 * * *',
      'sleep',
      '{"ms":0}',
      '--tz',
      'Europe/Berlin',
      '--missed',
      'once',
      '--label',
      'team=ops',
    ]);
    expect(set.stderr).toBe('');
    expect(set.code).toBe(0);
    expect(json(set.stdout)).toMatchObject({
      key: 'nightly',
      timezone: 'Europe/Berlin',
      missed: 'ONCE',
      nextRunAt: '2026-05-05T00:30:00.000Z',
    });

    const paused = await cli(['pause', 'nightly']);
    expect(json(paused.stdout)).toMatchObject({ paused: true, nextRunAt: null });
    const resumed = await cli(['resume', 'nightly']);
    expect(json(resumed.stdout)).toMatchObject({
      paused: false,
      nextRunAt: '2026-05-05T00:30:00.000Z',
    });

    const run = await cli(['run', 'nightly', '--follow']);
    expect(run.code).toBe(0);
    expect(json(run.stdout)).toMatchObject({ kind: 'sleep', status: 'COMPLETED' });

    const listed = await cli(['ls']);
    expect(json(listed.stdout)).toMatchObject({
      key: 'nightly',
      lastRunAt: '2026-05-04T10:00:30.000Z',
      lastTask: { status: 'COMPLETED' },
    });

    expect((await cli(['rm', 'nightly'])).code).toBe(0);
    const again = await cli(['rm', 'nightly']);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('no schedule nightly');
  });

  it('says what is wrong with a bad cron, zone or policy', async () => {
    const cron = await cli(['set', 'bad', '99 * * * *', 'sleep']);
    expect(cron.code).not.toBe(0);
    expect(cron.stderr).toContain('cron "99 * * * *"');
    const zone = await cli(['set', 'bad', '@daily', 'sleep', '--tz', 'Moon/Base']);
    expect(zone.stderr).toContain('timezone "Moon/Base"');
    const policy = await cli(['set', 'bad', '@daily', 'sleep', '--missed', 'sometimes']);
    expect(policy.stderr).toContain('--missed must be skip, once or all');
  });
});
