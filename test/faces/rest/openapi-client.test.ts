import { execFile } from 'node:child_process';
import { mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { alice, t, UNKNOWN_ID, useRestApp } from '../../helpers/rest-jobs.js';

useRestApp();

/**
 * docs/rest.md's typed client, done as a user would: openapi-typescript generates types from the
 * served document, tsc compiles a call made with openapi-fetch against them (a call the document
 * forbids must not compile), and the compiled call runs against the live server.
 */

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const bin = (path: string) => join(ROOT, 'node_modules', path);

const CLIENT = `import createClient from 'openapi-fetch';
import type { paths } from './api.js';

const client = createClient<paths>({
  baseUrl: process.env.BASE_URL!,
  headers: { authorization: \`Bearer \${process.env.TOKEN}\` },
});

const started = await client.POST('/v1/jobs', {
  params: { header: { 'Idempotency-Key': 'typed-client-1' } },
  body: { kind: 'hold', input: { from: 'a generated client' }, labels: { via: 'openapi' } },
});
if (!started.data) throw new Error(JSON.stringify(started.error));
const taskId: string = started.data.taskId;
const status: 'working' | 'input_required' | 'completed' | 'cancelled' | 'failed' =
  started.data.status;

const read = await client.GET('/v1/jobs/{taskId}', { params: { path: { taskId } } });
if (!read.data) throw new Error(JSON.stringify(read.error));
const attempts: number = read.data.attempt;

const missing = await client.GET('/v1/jobs/{taskId}', {
  params: { path: { taskId: process.env.UNKNOWN_ID! } },
});
const code: string | undefined = missing.error?.code;

/** What the document forbids does not compile; never called. */
export function forbidden() {
  // @ts-expect-error kind is required
  void client.POST('/v1/jobs', { body: { input: {} } });
  // @ts-expect-error ttlMs is an integer, not a string
  void client.POST('/v1/jobs', { body: { kind: 'hold', ttlMs: '60000' } });
  // @ts-expect-error no such route
  void client.GET('/v1/nowhere');
}

console.log(
  JSON.stringify({
    taskId,
    status,
    location: started.response.headers.get('location'),
    read: read.data,
    attempts,
    missing: { status: missing.response.status, code },
  }),
);
`;

const TSCONFIG = {
  compilerOptions: {
    target: 'ES2022',
    module: 'NodeNext',
    moduleResolution: 'NodeNext',
    strict: true,
    skipLibCheck: true,
    types: ['node'],
    outDir: 'out',
  },
  files: ['client.ts'],
};

let dir: string | undefined;
afterAll(() => (dir ? rm(dir, { recursive: true, force: true }) : undefined));

describe('a client generated from openapi.json', () => {
  it('compiles with tsc and starts a task and reads it back', { timeout: 120_000 }, async () => {
    dir = await mkdtemp(join(tmpdir(), 'taskhandle-openapi-client-'));
    // The generated client resolves openapi-fetch and @types/node as an installed project would.
    await symlink(join(ROOT, 'node_modules'), join(dir, 'node_modules'), 'dir');
    await writeFile(join(dir, 'package.json'), '{ "type": "module", "private": true }\n');
    await writeFile(join(dir, 'tsconfig.json'), JSON.stringify(TSCONFIG));
    await writeFile(join(dir, 'client.ts'), CLIENT);

    await run(
      process.execPath,
      [bin('openapi-typescript/bin/cli.js'), `${t.url}/v1/openapi.json`, '-o', 'api.d.ts'],
      { cwd: dir },
    );
    await run(process.execPath, [bin('typescript/bin/tsc'), '-p', '.'], { cwd: dir }).catch(
      (err: { stdout?: string }) => {
        throw new Error(`tsc refused the generated client:\n${err.stdout}`);
      },
    );
    const { stdout } = await run(process.execPath, [join(dir, 'out', 'client.js')], {
      env: { ...process.env, BASE_URL: t.url, TOKEN: alice, UNKNOWN_ID },
    });

    const result = JSON.parse(stdout);
    expect(result).toMatchObject({
      status: 'working',
      location: `/v1/jobs/${result.taskId}`,
      read: { taskId: result.taskId, status: 'working', labels: { via: 'openapi' } },
      missing: { status: 404, code: 'NOT_FOUND' },
    });
    expect(result.attempts).toBeTypeOf('number');
    const stored = await t.app.tasks.get({ id: 'alice', admin: false }, result.taskId);
    expect(stored?.input).toEqual({ from: 'a generated client' });
  });
});
