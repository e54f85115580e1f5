import { run } from '../../src/cli/main.js';

/** The `taskhandle` command as bin/taskhandle.js runs it from a checkout, for ./cli.ts. */
await run(process.argv.slice(2));
