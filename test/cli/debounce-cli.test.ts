import { describe, expect, it } from 'vitest';
import { debounceOption } from '../../src/cli/many.js';
import { runCli } from '../helpers/cli.js';
import { alice, t, useFileApp } from '../helpers/file-app.js';

/** `taskhandle start --debounce key:ms[:maxMs]` (DESIGN §17), run as a real process. */

useFileApp();

const cli = (args: string[]) =>
  runCli(args, { env: { TASKHANDLE_URL: t.url, TASKHANDLE_TOKEN: alice } });

describe('taskhandle start --debounce', () => {
  it('starts one task for two starts with a key, holding the second input', async () => {
    const first = await cli(['start', 'sleep', '{"ms":1}', '--debounce', 'cli:60000:120000']);
    const second = await cli(['start', 'sleep', '{"ms":2}', '--debounce', 'cli:60000:120000']);
    expect(first.code, first.stderr).toBe(0);
    expect(second.code, second.stderr).toBe(0);
    const [one, two] = [JSON.parse(first.stdout), JSON.parse(second.stdout)];
    expect(two.id).toBe(one.id);
    expect(two).toMatchObject({ version: 2, input: { ms: 2 }, status: 'WORKING' });
    expect(Date.parse(two.runAt)).toBe(Date.parse(two.lastUpdatedAt) + 60_000);
  });

  it("reports the server's refusal naming the field", async () => {
    const { code, stderr } = await cli(['start', 'sleep', '{"ms":1}', '--debounce', 'k:10:5']);
    expect(code).not.toBe(0);
    expect(stderr).toContain('debounce.maxDelayMs');
  });

  it('refuses a value without a delay before asking the server', async () => {
    const { code, stderr } = await cli(['start', 'sleep', '{}', '--debounce', 'just-a-key']);
    expect(code).not.toBe(0);
    expect(stderr).toContain('--debounce "just-a-key" must be key:ms or key:ms:maxMs');
  });

  it('reads the delays after the last colons, so a key may hold colons', () => {
    expect(debounceOption('reindex:5000')).toEqual({ key: 'reindex', delayMs: 5000 });
    expect(debounceOption('doc:42:5000:60000')).toEqual({
      key: 'doc:42',
      delayMs: 5000,
      maxDelayMs: 60000,
    });
    expect(debounceOption('user:ann:0')).toEqual({ key: 'user:ann', delayMs: 0 });
    expect(() => debounceOption('k:soon')).toThrow(/must be key:ms/);
  });
});
