import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  BIN,
  type CliRun,
  jsonLines,
  runCli,
  runCliOnTerminal,
  runCommand,
} from '../helpers/cli.js';
import { freePort } from '../helpers/client-server.js';
import { alice, t, useFileApp } from '../helpers/file-app.js';

/** The `taskhandle` command, run as a real process: piped, and on a pseudo-terminal. */

useFileApp();

let empty: string;
beforeAll(async () => {
  empty = mkdtempSync(join(tmpdir(), 'taskhandle-cli-')); // no development secret in it
});
afterAll(() => rmSync(empty, { recursive: true, force: true }));

/** The server, token and an empty DATA_DIR, with `env` over them. */
const base = (env: Record<string, string> = {}) => ({
  cwd: empty,
  env: { DATA_DIR: empty, TASKHANDLE_URL: t.url, TASKHANDLE_TOKEN: alice, ...env },
});

/** Runs `command` (argv[0] included); `onOutput` sees stdout as it grows. */
const run = (command: string[], env?: Record<string, string>, onOutput?: (s: string) => void) =>
  runCommand(command, { ...base(env), ...(onOutput ? { onOutput } : {}) });

const cli = (args: string[], env?: Record<string, string>, onOutput?: (s: string) => void) =>
  runCli(args, { ...base(env), ...(onOutput ? { onOutput } : {}) });

/** On a pseudo-terminal, as a person runs it. */
const onTerminal = (args: string[], onOutput?: (s: string) => void) =>
  runCliOnTerminal(args, { ...base(), ...(onOutput ? { onOutput } : {}) });

describe('piped', () => {
  it('start --follow prints one JSON line per change, in order, and exits 0 when completed', async () => {
    const { code, stdout } = await cli(['start', 'sleep', '{"ms":1500,"steps":5}', '--follow']);
    expect(code).toBe(0);
    const changes = jsonLines(stdout);
    const versions = changes.map((c) => c.version);
    expect(versions).toEqual([...versions].sort((a, b) => a - b));
    expect(changes.length).toBeGreaterThanOrEqual(2);
    expect(changes.at(-1)).toMatchObject({
      status: 'COMPLETED',
      result: { sleptMs: expect.any(Number) },
    });
    expect(new Set(changes.map((c) => c.id)).size).toBe(1);
  });

  it('get, ls --status and kinds print JSON', async () => {
    const [started] = jsonLines((await cli(['start', 'sleep', '{"ms":0}', '--key', 'k-1'])).stdout);
    expect(started).toMatchObject({ kind: 'sleep', version: 1 });
    const again = jsonLines((await cli(['start', 'sleep', '{"ms":0}', '--key', 'k-1'])).stdout);
    expect(again[0].id).toBe(started.id);
    await cli(['watch', started.id]);
    const [got] = jsonLines((await cli(['get', started.id])).stdout);
    expect(got).toMatchObject({ id: started.id, status: 'COMPLETED' });
    const listed = jsonLines((await cli(['ls', '--status', 'completed'])).stdout);
    expect(listed.map((task) => task.id)).toContain(started.id);
    expect(listed.every((task) => task.status === 'COMPLETED')).toBe(true);
    const kinds = jsonLines((await cli(['kinds'])).stdout);
    expect(kinds.map((k) => k.name)).toEqual(expect.arrayContaining(['sleep', 'approval']));
  });

  it('exits 1 when the task fails and 130 when it is cancelled', async () => {
    const failed = await cli(['start', 'sleep', '{"ms":0,"fail":"no luck"}', '--follow']);
    expect(failed.code).toBe(1);
    expect(jsonLines(failed.stdout).at(-1)).toMatchObject({
      status: 'FAILED',
      error: { message: 'no luck' },
    });

    const [long] = jsonLines((await cli(['start', 'sleep', '{"ms":600000}'])).stdout);
    let cancelling: Promise<CliRun> | undefined;
    const watched = await cli(['watch', long.id], {}, () => {
      cancelling ??= cli(['cancel', long.id]); // once the first state is out
    });
    expect(watched.code).toBe(130);
    expect(jsonLines(watched.stdout).at(-1).status).toBe('CANCELLED');
    expect((await cancelling)?.code).toBe(0);
  });

  it('answers an input request', async () => {
    const [task] = jsonLines((await cli(['start', 'approval', '{"question":"Ship it?"}'])).stdout);
    let answering: Promise<CliRun> | undefined;
    const watched = await cli(['watch', task.id], {}, (out) => {
      if (out.includes('INPUT_REQUIRED'))
        answering ??= cli(['answer', task.id, 'decision', '{"approved":true}']);
    });
    expect(watched.code).toBe(0);
    expect((await answering)?.code).toBe(0);
    expect(jsonLines(watched.stdout).at(-1).result).toEqual({ approved: true, comment: null });
  });
});

describe('failures are one clear line', () => {
  const oneLine = (r: CliRun) => {
    expect(r.code).not.toBe(0);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).not.toMatch(/\n\s+at /);
  };

  it('a bad token, over HTTP and over the WebSocket', async () => {
    const http = await cli(['ls'], { TASKHANDLE_TOKEN: 'not.a.token' });
    oneLine(http);
    expect(http.stderr).toMatch(/refused the token.*TASKHANDLE_TOKEN/);
    const ws = await cli(['watch', '00000000-0000-4000-8000-000000000000'], {
      TASKHANDLE_TOKEN: 'not.a.token',
    });
    oneLine(ws);
    expect(ws.stderr).toMatch(/refused the token/);
  });

  it('an unreachable server', async () => {
    const port = await freePort();
    const down = await cli(['kinds'], { TASKHANDLE_URL: `http://127.0.0.1:${port}` });
    oneLine(down);
    expect(down.stderr).toContain(`cannot reach the server at http://127.0.0.1:${port}`);
    const flag = await cli(['--url', `http://127.0.0.1:${port}`, 'watch', 'x']);
    oneLine(flag);
  });

  it('bad JSON and unknown tasks', async () => {
    oneLine(await cli(['start', 'sleep', '{nope']));
    const missing = await cli(['get', '00000000-0000-4000-8000-000000000000']);
    oneLine(missing);
    expect(missing.stderr).toContain('no task');
  });
});

describe('on a terminal', () => {
  it('shows a live bar that advances, then the result, and exits 0', async () => {
    const r = await onTerminal(['start', 'sleep', '{"ms":2000,"steps":4}', '--follow']);
    expect(r.code).toBe(0);
    const seen = [...r.stdout.matchAll(/(\d+)% \| (\w+)/g)].map((m) => Number(m[1]));
    // Redraws are throttled, so not every step need show; but the bar moves, and ends full.
    expect(new Set(seen.filter((p) => p > 0 && p < 100)).size).toBeGreaterThanOrEqual(2);
    expect(seen.at(-1)).toBe(100);
    expect(seen).toEqual([...seen].sort((a, b) => a - b));
    expect(r.stdout).toContain('step 2 of 4');
    expect(r.stdout).toMatch(/completed: \{"sleptMs":\d+\}/);
  });

  it('says how to answer an input request, and exits when answered', async () => {
    const [task] = jsonLines((await cli(['start', 'approval', '{"question":"Deploy?"}'])).stdout);
    let answering: Promise<CliRun> | undefined;
    const r = await onTerminal(['watch', task.id], (out) => {
      if (out.includes('answer with:'))
        answering ??= cli(['answer', task.id, 'decision', '{"approved":false}']);
    });
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(
      `answer with: taskhandle answer ${task.id} decision '{"approved":true}'`,
    );
    expect(r.stdout).toContain('Deploy?');
    expect((await answering)?.code).toBe(0);
  });

  it('exits 130 when the task is cancelled', async () => {
    const [task] = jsonLines((await cli(['start', 'sleep', '{"ms":600000}'])).stdout);
    let cancelling: Promise<CliRun> | undefined;
    const r = await onTerminal(['watch', task.id], (out) => {
      if (out.includes('working')) cancelling ??= cli(['cancel', task.id]);
    });
    expect(r.code).toBe(130);
    expect(r.stdout).toContain('cancelled');
    await cancelling;
  });
});

describe('installed', () => {
  it('runs through a link elsewhere, as npm link and npm install do', async () => {
    const bin = join(empty, 'taskhandle');
    symlinkSync(BIN, bin);
    const r = await run([bin, 'kinds']);
    expect(r.code).toBe(0);
    expect(jsonLines(r.stdout).map((k) => k.name)).toContain('sleep');
  });

  it('mints a token with the configured secret', async () => {
    const r = await cli(['token', '--sub', 'carol'], {
      AUTH_JWT_SECRET: 'taskhandle-test-secret-0123456789abcdef',
    });
    expect(r.code).toBe(0);
    const { token } = jsonLines(r.stdout)[0];
    const who = await t.gql('{ tasks { edges { cursor } } }', {}, token);
    expect(who.errors).toBeUndefined();
  });
});
