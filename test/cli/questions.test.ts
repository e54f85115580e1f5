import { describe, expect, it } from 'vitest';
import { eventually } from '../helpers/app.js';
import { runCli, runCliOnTerminal } from '../helpers/cli.js';
import { alice, t, useFileApp } from '../helpers/file-app.js';
import { survey } from '../helpers/survey-kind.js';

/** A task that waits on several questions at once, through the `taskhandle` command. */

useFileApp({ kinds: [survey] });

const env = () => ({ env: { TASKHANDLE_URL: t.url, TASKHANDLE_TOKEN: alice } });
const cli = (args: string[]) => runCli(args, env());

/**
 * Resolves once task `id` waits on `n` questions, read from the server in this process: a
 * command a poll would cost a Node process each time.
 */
async function waitsOn(id: string, n: number): Promise<void> {
  await eventually(async () => {
    const { data } = await t.gql(
      'query($id: ID!) { task(id: $id) { inputRequests { key } } }',
      { id },
      alice,
    );
    return data?.task.inputRequests?.length === n ? true : undefined;
  });
}

/** Starts a survey and resolves once it waits on both questions. */
async function asking(): Promise<string> {
  const started = await cli(['start', 'survey', '{}']);
  const id = JSON.parse(started.stdout).id as string;
  await waitsOn(id, 2);
  return id;
}

const occurrences = (text: string, part: string) => text.split(part).length - 1;

describe('a task that asks several questions at once', () => {
  it('get lists every question with the command that answers it', async () => {
    const id = await asking();
    const piped = JSON.parse((await cli(['get', id])).stdout);
    expect(piped.inputRequests.map((r: { key: string }) => r.key)).toEqual(['name', 'age']);
    expect(piped.inputRequest.key).toBe('name');

    const shown = await runCliOnTerminal(['get', id], env());
    expect(shown.code).toBe(0);
    expect(shown.stdout).toContain('asks:     Your name?');
    expect(shown.stdout).toContain(`answer:   taskhandle answer ${id} name JSON`);
    expect(shown.stdout).toContain('asks:     Your age?');
    expect(shown.stdout).toContain(`answer:   taskhandle answer ${id} age JSON`);
  });

  it('watch prints each question once, also while the other is answered, and ends completed', async () => {
    const id = await asking();
    let answeringName: Promise<unknown> | undefined;
    let answeringAge: Promise<unknown> | undefined;
    const watched = await runCliOnTerminal(['watch', id], {
      ...env(),
      onOutput: (out) => {
        if (out.includes('Your age?'))
          answeringName ??= cli(['answer', id, 'name', '{"name":"Ada"}']).then(async () => {
            // The name is stored (a new version, still waiting on the age) before the age.
            await waitsOn(id, 1);
            answeringAge ??= cli(['answer', id, 'age', '{"n":36}']);
          });
      },
    });
    await answeringName;
    await answeringAge;
    expect(watched.code, watched.stdout).toBe(0);
    expect(occurrences(watched.stdout, 'asks: Your name?')).toBe(1);
    expect(occurrences(watched.stdout, 'asks: Your age?')).toBe(1);
    expect(watched.stdout).toContain(`taskhandle answer ${id} age '{"n":0}'`);
    const result = watched.stdout.match(/completed: (.*)/)?.[1];
    expect(result && JSON.parse(result)).toMatchObject({ name: 'Ada', age: 36 });
  });
});
