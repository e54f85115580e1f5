#!/usr/bin/env node
// The `taskhandle` command. The sources are TypeScript, run through tsx (a dependency), so
// the command works from a fresh clone (`npx taskhandle`) and after `npm link` alike.
import { tsImport } from 'tsx/esm/api';

const { run } = await tsImport('./main.ts', import.meta.url);
await run(process.argv.slice(2));
