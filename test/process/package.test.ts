import { execFile, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, SECRET } from '../helpers/app.js';
import { backend, freshDatabase, type TestDatabase } from '../helpers/db.js';
import { lockDist } from '../helpers/dist-lock.js';
import { ROOT } from '../helpers/process.js';
import { readWriteToken } from '../helpers/secret.js';

/**
 * The package as another project gets it: `npm pack`, installed from the tarball into a
 * project with neither tsx nor TypeScript, a server of its own with one kind of its own
 * using only the public exports, started with plain `node`; the client, the bin and the type
 * declarations from the same install.
 */

const run = promisify(execFile);
const work = mkdtempSync(join(tmpdir(), 'taskhandle-package-'));
const project = join(work, 'project');
let files: string[] = [];
let database: TestDatabase | undefined;

beforeAll(async () => {
  if (backend === 'pg') database = await freshDatabase();
  const unlockDist = await lockDist();
  const { stdout } = await run('npm', ['pack', '--json', '--pack-destination', work], {
    cwd: ROOT,
    maxBuffer: 16 * 1024 * 1024,
  }).finally(unlockDist);
  // prepack's build output comes first; the JSON report is the last thing printed.
  const report = JSON.parse(stdout.slice(stdout.lastIndexOf('\n[') + 1)) as Array<{
    filename: string;
    files: Array<{ path: string }>;
  }>;
  files = report[0]!.files.map((f) => f.path);
  mkdirSync(project);
  writeFileSync(
    join(project, 'package.json'),
    JSON.stringify({ name: 'consumer', private: true, type: 'module' }),
  );
  await run(
    'npm',
    ['install', '--no-audit', '--no-fund', '--prefer-offline', join(work, report[0]!.filename)],
    { cwd: project },
  );
}, 600_000);
afterAll(async () => {
  await database?.drop();
  rmSync(work, { recursive: true, force: true }); // a whole installed node_modules
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
        'web/index.html',
        'README.md',
        'LICENSE',
      ]),
    );
    expect(files.filter((f) => /^(src|test|bench|docs)\/|\.map$/.test(f))).toEqual([]);
  });

  it('runs a server of its own kinds with plain node, reached over REST and the client', async () => {
    writeFileSync(join(project, 'server.mjs'), SERVER);
    writeFileSync(join(project, 'client.mjs'), CLIENT);
    const child = spawn(process.execPath, ['server.mjs'], {
      cwd: project,
      env: {
        PATH: process.env.PATH ?? '',
        NODE_ENV: 'production',
        PORT: '0',
        HOST: '127.0.0.1',
        AUTH_JWT_SECRET: SECRET,
        DATA_DIR: join(work, 'data'),
        LOG_LEVEL: 'warn',
        ...(database?.url ? { DATABASE_URL: database.url } : {}),
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
        return stdout.match(/"listening":"(http:[^"]+)"/)?.[1];
      }, 120_000);
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
        const job = (await (await fetch(`${url}/v1/jobs/${taskId}`, { headers: auth })).json()) as {
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
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited).toBe(0);
    expect(stderr).toBe('');
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
