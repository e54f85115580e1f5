import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../helpers/app.js';
import { jsonLines, runCli } from '../helpers/cli.js';
import { alice, t, useFileApp } from '../helpers/file-app.js';

/** `taskhandle start --batch`, `--label` and `retry` (DESIGN §15), run as real processes. */

useFileApp();

let empty: string;
beforeAll(async () => {
  empty = mkdtempSync(join(tmpdir(), 'taskhandle-cli-many-'));
});
afterAll(() => rmSync(empty, { recursive: true, force: true }));

const cli = (args: string[], stdin = '') =>
  runCli(args, {
    cwd: empty,
    env: { DATA_DIR: empty, TASKHANDLE_URL: t.url, TASKHANDLE_TOKEN: alice },
    stdin,
  });

describe('taskhandle start --batch', () => {
  it('starts every NDJSON line, 100 a call, and prints one handle a line in input order', async () => {
    const entries = Array.from({ length: 150 }, (_, i) => ({
      kind: 'sleep',
      input: { ms: 0 },
      labels: { line: String(i) },
    }));
    const stdin = `${entries.map((e) => JSON.stringify(e)).join('\n')}\n\n`;
    const { code, stdout, stderr } = await cli(['start', '--batch'], stdin);
    expect(stderr).toBe('');
    expect(code).toBe(0);
    const handles = jsonLines(stdout);
    expect(handles).toHaveLength(150);
    expect(new Set(handles.map((h) => h.id)).size).toBe(150);
    const labels = await t.gql(
      'query($id: ID!) { task(id: $id) { labels } }',
      { id: handles[149].id },
      alice,
    );
    expect(labels.data.task.labels).toEqual({ line: '149' });
  });

  it('names the bad entry and starts nothing of its call', async () => {
    const stdin = [{ kind: 'sleep', input: { ms: 0 } }, { kind: 'nope' }]
      .map((e) => JSON.stringify(e))
      .join('\n');
    const { code, stdout, stderr } = await cli(['start', '--batch'], stdin);
    expect(code).not.toBe(0);
    expect(stdout).toBe('');
    expect(stderr).toMatch(/BAD_USER_INPUT: entry 1/);
  });
});

describe('taskhandle start --label and retry', () => {
  it('labels a task, and runs a failed one again as a new task', async () => {
    const started = await cli([
      'start',
      'sleep',
      '{"ms":0,"fail":"no"}',
      '--label',
      'team=a',
      '--label',
      'env=prod',
    ]);
    expect(started.code).toBe(0);
    const { id } = JSON.parse(started.stdout);
    await eventually(async () => {
      const res = await t.gql('query($id: ID!) { task(id: $id) { status } }', { id }, alice);
      return res.data.task.status === 'FAILED' ? true : undefined;
    });
    const retried = await cli(['retry', id]);
    expect(retried.code).toBe(0);
    const again = JSON.parse(retried.stdout);
    expect(again.id).not.toBe(id);
    const res = await t.gql(
      'query($id: ID!) { task(id: $id) { labels retryOf } }',
      { id: again.id },
      alice,
    );
    expect(res.data.task).toEqual({ labels: { team: 'a', env: 'prod' }, retryOf: id });
  });
});
