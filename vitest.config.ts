import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  resolve: {
    // graphql@16 ships CJS and ESM builds; Node (and so every dependency) loads the CJS one.
    // Test files must load the same copy, or graphql-js refuses types "from another realm".
    alias: [{ find: /^graphql$/, replacement: 'graphql/index.js' }],
  },
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['./test/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Test files share their worker's modules instead of importing the whole server again
    // each (about a third of the suite's CPU). Each file still gets its own database and
    // apps, so a file must leave no timer, server or child process running when it ends.
    isolate: false,
    // Two files at a time even on two cores (vitest's default there is one): much of a test's
    // time is spent waiting on Postgres, child processes and sockets, not on its own CPU.
    maxWorkers: Math.max(2, availableParallelism() - 1),
    env: { NODE_ENV: 'test' },
  },
});
