import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  check,
  expectAlive,
  HEAP_SLACK,
  heapUsed,
  mib,
  server,
  url,
  useFuzzServer,
} from '../helpers/fuzz.js';

/**
 * The hostile documents of §12 (huge, deep, directive- and alias-heavy, megabytes of
 * variables) sent to a running server process (NODE_ENV=production) round after round: the
 * process lives on and the heap, measured after a full collection, stops growing. Shares the
 * server setup of test/helpers/fuzz.ts with test/fuzz/fuzz.test.ts.
 */

describe('fuzzing a running server', { timeout: 120_000 }, () => {
  useFuzzServer();

  it('keeps no memory for the hostile documents of §12, sent again and again', async () => {
    // Each document is distinct, so no cache can answer it from a previous copy: ~200 KB of
    // 100 000 tokens, 20 000 directives, a selection nested 10 000 deep, 1 000 aliases, and
    // 5 MiB of variables. Unauthenticated, as an attacker would send them, each with its hash
    // as automatic persisted queries take it: registered before the parser refuses it, so the
    // registrations' bound (GRAPHQL_APQ_CACHE_BYTES, 8 MiB) is what keeps the heap, not luck.
    const documents = (n: number): Array<{ query: string; variables?: unknown }> => [
      { query: `{ ${Array.from({ length: 33_000 }, (_, i) => `a${n}_${i}`).join(' ')} }` },
      { query: `{ __typename ${'@skip(if: false) '.repeat(20_000)} }` },
      { query: `${'{ task(id: "x") '.repeat(10_000)}${'}'.repeat(10_000)}` },
      {
        query: `{ ${Array.from({ length: 1_000 }, (_, i) => `t${n}_${i}: taskKinds { name }`).join(' ')} }`,
      },
      {
        query: `query Q${n}($v: JSON) { __typename }`,
        variables: { v: 'x'.repeat(5 * 1_048_576) },
      },
    ];
    const round = async (from: number) => {
      for (let n = from; n < from + 20; n++) {
        for (const body of documents(n)) {
          const sha256Hash = createHash('sha256').update(body.query).digest('hex');
          const response = await fetch(`${url}/graphql`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({
              ...body,
              extensions: { persistedQuery: { version: 1, sha256Hash } },
            }),
          });
          await check(response, '/graphql');
        }
      }
      expectAlive();
      return heapUsed();
    };
    const start = await heapUsed();
    const first = await round(0);
    const second = await round(1_000);
    const third = await round(2_000);
    console.log(
      `hostile heap: start ${mib(start)} MiB, rounds ${mib(first)}, ${mib(second)}, ${mib(third)} MiB`,
    );
    expect(third - first).toBeLessThan(HEAP_SLACK);
    expectAlive();
    expect(server.stderr()).not.toMatch(/Unhandled|FATAL|heap out of memory/);
  });
});
