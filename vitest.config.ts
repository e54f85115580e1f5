import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';
import { LongestFirst } from './test/sequencer.js';

export default defineConfig({
  resolve: {
    // graphql@16 ships CJS and ESM builds; Node (and so every dependency) loads the CJS one.
    // Test files must load the same copy, or graphql-js refuses types "from another realm".
    alias: [{ find: /^graphql$/, replacement: 'graphql/index.js' }],
  },
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['./test/global-setup.ts'],
    // Every REST answer a test receives is checked against openapi.json (issue 42).
    setupFiles: ['./test/openapi-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Test files share their worker's modules instead of importing the whole server again
    // each (about a third of the suite's CPU). Each file still gets its own database and
    // apps, so a file must leave no timer, server or child process running when it ends.
    isolate: false,
    // One file more than there are cores (vitest's default is one fewer): much of a test's time
    // is spent waiting on Postgres, child processes, sockets and the clocks of leases, not on
    // its own CPU. On two loaded cores, three files at a time ran a third of the suite (faces,
    // tasks, webhooks on Postgres) in 109 and 132 s against 175 and 163 s for two.
    maxWorkers: availableParallelism() + 1,
    sequence: { sequencer: LongestFirst },
    env: { NODE_ENV: 'test' },
  },
});
