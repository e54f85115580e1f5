import { createHash } from 'node:crypto';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { transformSync } from 'esbuild';

/**
 * The checkout's TypeScript compiled ahead, for the server processes tests spawn by the
 * dozen: `node --import tsx` spends a second or two of CPU at each start on the loader
 * (its hook thread sees every import), while the same code compiled once starts in about
 * half the time. esbuild is the compiler tsx itself runs, with the project's tsconfig, file
 * for file, so the code is the same. Tests about how users start the server (`npm start`,
 * a terminal, the built package) do not use it.
 */

/** What a spawned entry may import: the server and the tests' own server scripts. */
const SOURCES = ['src', 'test/helpers'];
/** Read beside the code through `import.meta.url` (migrations, the dashboard, the version). */
const BESIDE = ['migrations', 'web', 'package.json'];

let built: { key: string; dir: string } | undefined;

/**
 * The compiled twin of `script` (a path from the checkout's root, `src/main.ts`), compiled
 * now if a source changed since the last call. Kept under node_modules/.cache, in a folder
 * named for the sources' content, so that test processes running side by side share it, and
 * bare imports resolve to the checkout's node_modules.
 */
export function compiledEntry(root: string, script: string): string {
  const files = SOURCES.flatMap((dir) => filesUnder(join(root, dir)));
  const hash = createHash('sha256');
  for (const file of files) hash.update(file).update('\0').update(readFileSync(file));
  // Compiled for this Node (CI runs the suite under several from one checkout).
  hash.update(readFileSync(join(root, 'tsconfig.json'))).update(process.version);
  const key = hash.digest('hex').slice(0, 16);
  if (built?.key !== key) built = { key, dir: build(root, files, key) };
  return join(built.dir, script.replace(/\.ts$/, '.js'));
}

function build(root: string, files: string[], key: string): string {
  const cache = join(root, 'node_modules/.cache/taskhandle-compiled');
  const dir = join(cache, key);
  if (existsSync(dir)) return dir;
  prune(cache);
  // Written aside and renamed into place whole: another test process may be building it too.
  const staging = `${dir}.${process.pid}`;
  rmSync(staging, { recursive: true, force: true });
  const tsconfigRaw = readFileSync(join(root, 'tsconfig.json'), 'utf8');
  for (const file of files) {
    const target = join(staging, relative(root, file));
    mkdirSync(dirname(target), { recursive: true });
    if (!file.endsWith('.ts')) {
      copyFileSync(file, target);
      continue;
    }
    const { code } = transformSync(readFileSync(file, 'utf8'), {
      loader: 'ts',
      format: 'esm',
      target: `node${process.versions.node}`,
      tsconfigRaw,
      sourcefile: file,
      // Failures in a spawned server name the TypeScript line (with --enable-source-maps).
      sourcemap: 'inline',
    });
    writeFileSync(target.replace(/\.ts$/, '.js'), code);
  }
  for (const name of BESIDE) symlinkSync(join(root, name), join(staging, name));
  try {
    renameSync(staging, dir);
  } catch (err) {
    rmSync(staging, { recursive: true, force: true });
    if (!existsSync(dir)) throw err;
  }
  return dir;
}

/** Drops the copies of sources edited away more than a day ago. */
function prune(cache: string): void {
  const dayAgo = Date.now() - 86_400_000;
  for (const entry of existsSync(cache) ? readdirSync(cache) : []) {
    const path = join(cache, entry);
    if (statSync(path).mtimeMs < dayAgo) rmSync(path, { recursive: true, force: true });
  }
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && /\.(ts|js)$/.test(e.name) && !e.name.endsWith('.test.ts'))
    .map((e) => join(e.parentPath, e.name))
    .sort();
}
