import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, startTestApp, type TestApp } from '../helpers/app.js';
import { runCli, runCliOnTerminal } from '../helpers/cli.js';

/**
 * DESIGN §16 from a shell, as real processes: `get --steps` (a timeline on a terminal, the
 * journal in JSON otherwise), `signal`, `ls --parent` and `retry --from-step`, on `pipeline`.
 */

let t: TestApp;
let alice: string;
let empty: string;
beforeAll(async () => {
  t = await startTestApp();
  alice = await t.token('alice');
  empty = mkdtempSync(join(tmpdir(), 'taskhandle-cli-steps-'));
});
afterAll(async () => {
  await t?.stop();
  rmSync(empty, { recursive: true, force: true });
});

const options = () => ({
  cwd: empty,
  env: { DATA_DIR: empty, TASKHANDLE_URL: t.url, TASKHANDLE_TOKEN: alice },
});
const cli = (args: string[]) => runCli(args, options());
const json = async (args: string[]) => {
  const { code, stdout, stderr } = await cli(args);
  expect(stderr).toBe('');
  expect(code).toBe(0);
  return JSON.parse(stdout.trim());
};

const start = async (input: unknown, extra: string[] = []) =>
  (await json(['start', 'pipeline', JSON.stringify(input), ...extra])).id as string;

const stepsOf = async (id: string) => (await json(['get', id, '--steps'])).steps as any[];

describe('taskhandle get --steps and signal', () => {
  it('shows the wait for a signal with the command and URL that end it, then the rest of the run', async () => {
    const id = await start({ stages: 2, signal: 'paid', children: 1 });
    const waiting = await eventually(async () => {
      const steps = await stepsOf(id);
      return steps.find((s) => s.state === 'WAITING_SIGNAL' && s.signalUrl);
    });
    expect(waiting).toMatchObject({ name: 'paid', attempts: 0, endedAt: null, result: null });

    const screen = await runCliOnTerminal(['get', id, '--steps'], options());
    expect(screen.code).toBe(0);
    const text = screen.stdout.replaceAll('\r', '');
    expect(text).toMatch(/^ {4}STEP +STATE +RUNS +STARTED +ENDED +NOTE$/m);
    expect(text).toMatch(/^ {4}stage-1 +done +1 +\d+s ago +\d+s ago$/m);
    expect(text).toContain(`for signal paid: taskhandle signal ${id} paid JSON`);
    expect(text).toContain(`or POST ${waiting.signalUrl}`);

    const bad = await cli(['signal', id, 'paid', '{nope']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/^taskhandle: the payload is not valid JSON/);

    const sent = await json(['signal', id, 'paid', '{"amount": 12}']);
    expect(sent).toMatchObject({ id, parentId: null });

    const done = await eventually(async () => {
      const task = await json(['get', id, '--steps']);
      return task.status === 'COMPLETED' ? task : undefined;
    });
    expect(done.steps.map((s: any) => `${s.name}:${s.state}`)).toEqual([
      'stage-1:COMPLETED',
      'paid:COMPLETED',
      'stage-2:COMPLETED',
      'child-1:COMPLETED',
    ]);
    expect(done.steps[1].result).toEqual({ amount: 12 });
    const childId = done.steps[3].childId as string;

    const after = (await runCliOnTerminal(['get', id, '--steps'], options())).stdout;
    expect(after.replaceAll('\r', '')).toMatch(
      new RegExp(`^ {4}child-1 +done .*child ${childId}$`, 'm'),
    );
    const child = (await runCliOnTerminal(['get', childId, '--steps'], options())).stdout;
    expect(child).toContain(`parent:   ${id}`);
    expect(child).toContain('steps:    none journalled');

    const listed = await cli(['ls', '--parent', id, '--json']);
    expect(listed.code).toBe(0);
    expect(
      listed.stdout
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l).id),
    ).toEqual([childId]);
  });

  it('another payload for a signal already sent is SIGNAL_ALREADY_SENT', async () => {
    // After its signal the task waits for a child of a minute: it is still working.
    const id = await start({ stages: 1, signal: 'go', children: 1, childMs: 60_000 });
    await json(['signal', id, 'go', '{"n": 1}']);
    await json(['signal', id, 'go', '{"n": 1}']);
    const other = await cli(['signal', id, 'go', '{"n": 2}']);
    expect(other.code).toBe(2);
    expect(other.stderr).toMatch(/^taskhandle: SIGNAL_ALREADY_SENT: /);
    await cli(['cancel', id]);
  });

  it('a signal to another principal’s or an unknown task is NOT_FOUND', async () => {
    const id = await start({ stages: 1, signal: 'x' });
    const bob = await runCli(['signal', id, 'x', '1'], {
      ...options(),
      env: { ...options().env, TASKHANDLE_TOKEN: await t.token('bob') },
    });
    expect(bob.code).toBe(2);
    expect(bob.stderr).toMatch(/^taskhandle: NOT_FOUND: /);
    await cli(['cancel', id]);
  });
});

describe('taskhandle retry --from-step', () => {
  it('runs a failed pipeline again keeping the steps before the one named', async () => {
    const id = await start({ stages: 3, failAtStage: 2, failTimes: 1 }, ['--max-attempts', '1']);
    const failed = await eventually(async () => {
      const task = await json(['get', id, '--steps']);
      return task.status === 'FAILED' ? task : undefined;
    });
    const unknown = await cli(['retry', id, '--from-step', 'stage-7']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('BAD_USER_INPUT');
    const again = await json(['retry', id, '--from-step', 'stage-2']);
    expect(again.id).not.toBe(id);
    const steps = await eventually(async () => {
      const task = await json(['get', again.id, '--steps']);
      return task.status === 'FAILED' ? task.steps : undefined;
    });
    expect(steps[0]).toEqual(failed.steps[0]);
    expect(steps[1]).toMatchObject({ name: 'stage-2', state: 'FAILED' });
  });
});
