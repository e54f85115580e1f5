import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';

/** What the fuzz test (test/fuzz/fuzz.test.ts) found, kept as plain regression tests. */

let t: TestApp;
let token: string;
beforeAll(async () => {
  t = await startTestApp();
  token = await t.token('alice');
});
afterAll(() => t?.stop());

describe('request targets that are not plain paths', () => {
  // Seed 1945944790: `GET //` reached the REST face, whose URL parser threw (a 500).
  it.each(['//', '//v1/jobs', '///x', '//localhost/v1/jobs'])(
    '%s is a 404, not a 500',
    async (path) => {
      const response = await fetch(`${t.url}${path}`, {
        headers: { authorization: `Bearer ${token}` },
      });
      expect(response.status).toBe(404);
    },
  );
});
