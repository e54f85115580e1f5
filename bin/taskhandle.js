#!/usr/bin/env node
// The `taskhandle` command. An installed package runs the compiled dist/. A checkout (src/
// beside this file, tsx installed) runs the TypeScript sources, so the command never lags
// behind an edit and works from a fresh clone (`npx taskhandle`) without a build.
import { existsSync } from 'node:fs';

const source = new URL('../src/cli/main.ts', import.meta.url);

async function sourceLoader() {
  if (!existsSync(source)) return undefined;
  try {
    return (await import('tsx/esm/api')).tsImport;
  } catch (err) {
    if (err?.code === 'ERR_MODULE_NOT_FOUND') return undefined; // installed without dev tools
    throw err;
  }
}

const tsImport = await sourceLoader();
const { run } = tsImport
  ? await tsImport(source.href, import.meta.url)
  : await import('../dist/cli/main.js');
await run(process.argv.slice(2));
