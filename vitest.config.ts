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
    env: { NODE_ENV: 'test' },
  },
});
