import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../helpers/app.js';
import { databaseEnv } from '../helpers/database-env.js';
import { backend, freshDatabase, seedDataDir, type TestDatabase } from '../helpers/db.js';
import { lockDist } from '../helpers/dist-lock.js';
import { gqlAt, ROOT, SERVER_ENV } from '../helpers/process.js';
import { readWriteToken } from '../helpers/secret.js';

/**
 * The package as another project gets it: `npm pack` (whose prepack is `npm run build`),
 * installed from the tarball into a project with neither tsx nor TypeScript; the production
 * start, `node dist/main.js` with no loader; a server of its own with one kind of its own
 * using only the public exports, started with plain `node`; the client, the bin and the type
 * declarations from the same install. One build and one install for all of it: each costs
 * tens of seconds of CPU.
 */

const run = promisify(execFile);
const work = mkdtempSync(join(tmpdir(), 'taskhandle-package-'));
/**
 * With TEST_PACKAGE_DIR set, the packed and installed package is kept there (one folder per
 * Node version) for the next run of this checkout: CI's Postgres and PGlite runs share one,
 * so the second runs on what the first built and installed from the same sources minutes
 * before. Unset, each run packs and installs its own.
 */
const kept = process.env.TEST_PACKAGE_DIR
  ? join(process.env.TEST_PACKAGE_DIR, `node-${process.version}`)
  : undefined;
const packed = kept ?? work;
const project = join(packed, 'project');
/** Written last: the package in `packed` is whole. */
const FILES = join(packed, 'files.json');
let files: string[] = [];
let database: TestDatabase | undefined;

beforeAll(async () => {
  if (backend === 'pg') database = await freshDatabase();
  if (existsSync(FILES)) {
    files = JSON.parse(readFileSync(FILES, 'utf8'));
    return;
  }
  rmSync(project, { recursive: true, force: true }); // a run that stopped halfway
  mkdirSync(packed, { recursive: true });
  const unlockDist = await lockDist();
  const { stdout } = await run('npm', ['pack', '--json', '--pack-destination', packed], {
    cwd: ROOT,
    maxBuffer: 16 * 1024 * 1024,
  }).finally(unlockDist);
  // prepack's build output comes first; the JSON report is the last thing printed.
  const report = JSON.parse(stdout.slice(stdout.lastIndexOf('\n[') + 1)) as Array<{
    filename: string;
    files: Array<{ path: string }>;
  }>;
  mkdirSync(project, { recursive: true });
  writeFileSync(
    join(project, 'package.json'),
    JSON.stringify({ name: 'consumer', private: true, type: 'module' }),
  );
  await run(
    'npm',
    ['install', '--no-audit', '--no-fund', '--prefer-offline', join(packed, report[0]!.filename)],
    { cwd: project },
  );
  files = report[0]!.files.map((f) => f.path);
  writeFileSync(FILES, JSON.stringify(files));
}, 600_000);
afterAll(async () => {
  await database?.drop();
  rmSync(work, { recursive: true, force: true }); // a whole installed node_modules, unless kept
}, 300_000);

const SERVER = `
import { createApp, defineTaskKind, loadConfig } from 'taskhandle';

const greet = defineTaskKind({
  name: 'greet',
  description: 'Greets someone.',
  inputSchema: {
    type: 'object',
    properties: { name: { type: 'string' } },
    required: ['name'],
    additionalProperties: false,
  },
  async run({ input }) {
    return { greeting: 'Hello, ' + input.name };
  },
});

const app = await createApp({ config: loadConfig(), kinds: [greet] });
const url = await app.listen();
console.log(JSON.stringify({ listening: url }));
process.once('SIGTERM', () => void app.stop().then(() => process.exit(0)));
`;

const CLIENT = `
import { createClient, TaskFailed } from 'taskhandle/client';

const client = createClient({ url: process.argv[2], token: process.env.TOKEN });
const t = await client.start('greet', { name: 'client' });
console.log(JSON.stringify(await t.result()));
await client.close();
`;

const CONSUMER = `
import { createApp, defineTaskKind, type TaskKind } from 'taskhandle';
import { createClient, TaskFailed } from 'taskhandle/client';

const greet: TaskKind<{ name: string }, { greeting: string }> = defineTaskKind<
  { name: string },
  { greeting: string }
>({
  name: 'greet',
  description: 'Greets someone.',
  inputSchema: { type: 'object' },
  async run({ input }) {
    return { greeting: input.name };
  },
});

export async function main(): Promise<string> {
  void createApp;
  const client = createClient<{ greet: typeof greet }>({ url: 'http://127.0.0.1:4000' });
  // @ts-expect-error: greet's input is { name: string }
  await client.start('greet', { nom: 'x' });
  const t = await client.start('greet', { name: 'x' });
  try {
    return (await t.result()).greeting;
  } catch (err) {
    if (err instanceof TaskFailed) return err.code;
    throw err;
  }
}
`;

/**
 * Runs `node script` in the consumer project as production runs it (no loader; of the test
 * process's environment only PATH), on this run's database or in `dataDir`; hands `use` the
 * URL it prints (the first group of `printed`), then stops it with SIGTERM: it must exit 0
 * and write nothing to stderr.
 */
async function withPlainNode(
  script: string,
  dataDir: string,
  printed: RegExp,
  use: (url: string) => Promise<void>,
): Promise<void> {
  const child = spawn(process.execPath, [script], {
    cwd: project,
    env: {
      PATH: process.env.PATH ?? '',
      NODE_ENV: 'production',
      ...SERVER_ENV,
      DATA_DIR: dataDir,
      ...(database?.url ? databaseEnv(database.url) : {}),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<number | null>((resolve) => child.once('close', resolve));
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  try {
    const url = await eventually(async () => {
      if (child.exitCode !== null) throw new Error(`exited: ${stderr}`);
      return printed.exec(stdout)?.[1];
    }, 120_000);
    await use(url);
  } finally {
    child.kill('SIGTERM');
  }
  expect(await exited).toBe(0);
  expect(stderr).toBe('');
}

describe('npm pack, installed elsewhere', { timeout: 180_000 }, () => {
  it('publishes what running needs and nothing else', () => {
    expect(files).toEqual(
      expect.arrayContaining([
        'dist/index.js',
        'dist/index.d.ts',
        'dist/client/index.js',
        'dist/client/index.d.ts',
        'dist/kinds/primes-worker.js',
        'bin/taskhandle.js',
        'migrations/0001_tasks.sql',
        'openapi.json',
        'web/index.html',
        'README.md',
        'LICENSE',
      ]),
    );
    expect(files.filter((f) => /^(src|test|bench|docs)\/|\.map$/.test(f))).toEqual([]);
  });

  it('starts with node dist/main.js: migrates, runs tasks (a worker thread too) and stops with 0', async () => {
    // On the migrated database (on PGlite: seeded; a first start is start-stop's to prove),
    // which the migrator checks against the published migrations/ it reads.
    const main = join(project, 'node_modules/taskhandle/dist/main.js');
    await seedDataDir(join(work, 'main-data'));
    await withPlainNode(main, join(work, 'main-data'), /"url":"(http:[^"]+)"/, async (url) => {
      expect((await fetch(`${url}/readyz`)).status).toBe(200);
      // No loader in this process: the primes sieve's worker thread loads a file from dist/.
      const token = await readWriteToken();
      const started = await gqlAt(
        url,
        'mutation { startTask(input: { kind: "primes", input: { limit: 100000 } }) { id } }',
        {},
        token,
      );
      const id = started.data.startTask.id;
      const done = await eventually(async () => {
        const { data } = await gqlAt(
          url,
          'query($id: ID!) { task(id: $id) { status result } }',
          { id },
          token,
        );
        return data.task.status === 'WORKING' ? undefined : data.task;
      }, 20_000);
      expect(done).toEqual({ status: 'COMPLETED', result: { limit: 100000, count: 9592 } });
    });
  });

  it('runs a server of its own kinds with plain node, reached over REST and the client', async () => {
    writeFileSync(join(project, 'server.mjs'), SERVER);
    writeFileSync(join(project, 'client.mjs'), CLIENT);
    await seedDataDir(join(work, 'data'));
    await withPlainNode(
      'server.mjs',
      join(work, 'data'),
      /"listening":"(http:[^"]+)"/,
      async (url) => {
        const token = await readWriteToken();
        const auth = { authorization: `Bearer ${token}` };
        const started = await fetch(`${url}/v1/jobs`, {
          method: 'POST',
          headers: { ...auth, 'content-type': 'application/json' },
          body: JSON.stringify({ kind: 'greet', input: { name: 'REST' } }),
        });
        expect(started.status).toBe(202);
        const { taskId } = (await started.json()) as { taskId: string };
        const done = await eventually(async () => {
          const job = (await (
            await fetch(`${url}/v1/jobs/${taskId}`, { headers: auth })
          ).json()) as {
            status: string;
          };
          return job.status === 'working' ? undefined : job;
        }, 30_000);
        expect(done).toMatchObject({ status: 'completed', result: { greeting: 'Hello, REST' } });

        const client = await run(process.execPath, ['client.mjs', url], {
          cwd: project,
          env: { PATH: process.env.PATH ?? '', TOKEN: token },
        });
        expect(JSON.parse(client.stdout)).toEqual({ greeting: 'Hello, client' });

        // The bin of the installed package: dist/, as no sources were published.
        const kinds = await run(
          join(project, 'node_modules/.bin/taskhandle'),
          ['--url', url, '--token', token, '--json', 'kinds'],
          { cwd: project, env: { PATH: process.env.PATH ?? '' } },
        );
        expect(
          kinds.stdout
            .split('\n')
            .filter(Boolean)
            .map((l) => JSON.parse(l).name),
        ).toContain('greet');
      },
    );
  });

  it("type-checks a consumer's TypeScript against the published declarations", async () => {
    writeFileSync(join(project, 'consumer.ts'), CONSUMER);
    writeFileSync(
      join(project, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2022',
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          strict: true,
          noEmit: true,
          skipLibCheck: true,
          types: ['node'],
          typeRoots: [join(ROOT, 'node_modules/@types')],
        },
        files: ['consumer.ts'],
      }),
    );
    const tsc = join(ROOT, 'node_modules/typescript/bin/tsc');
    const checked = await run(process.execPath, [tsc, '-p', 'tsconfig.json'], {
      cwd: project,
    }).catch((err: { stdout: string }) => err);
    expect(checked.stdout).toBe('');
  });
});
