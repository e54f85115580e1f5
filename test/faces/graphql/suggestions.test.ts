import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { collect, startTestApp, type TestApp } from '../../helpers/app.js';

/**
 * DESIGN §12: in production no suggestion ("Did you mean …") is ever given, not for fields,
 * arguments, types or enum values: each one names a part of the schema that introspection,
 * turned off there, would not show.
 */

const TYPOS: Array<{ what: string; query: string; variables?: Record<string, unknown> }> = [
  {
    what: 'an enum value in the document',
    query: '{ tasks(first: 1, status: [WORKIN]) { edges { node { id } } } }',
  },
  {
    what: 'an enum value in a variable',
    query: 'query($s: [TaskStatus!]) { tasks(first: 1, status: $s) { edges { node { id } } } }',
    variables: { s: ['WORKIN'] },
  },
  { what: 'a field', query: '{ tasks(first: 1) { edgs { node { id } } } }' },
  { what: 'an argument', query: '{ tasks(frst: 1) { edges { node { id } } } }' },
  {
    what: 'a type',
    query: 'query($s: [TaskStatu!]) { tasks(first: 1, status: $s) { edges { node { id } } } }',
  },
];

let production: TestApp;
let development: TestApp;
beforeAll(async () => {
  [production, development] = await Promise.all([
    startTestApp({ env: { NODE_ENV: 'production' } }),
    startTestApp(),
  ]);
});
afterAll(() => Promise.all([production?.stop(), development?.stop()]));

describe('a production server', () => {
  for (const { what, query, variables } of TYPOS) {
    it(`suggests nothing for ${what} mistyped, and still codes the error`, async () => {
      const token = await production.token('alice');
      for (const auth of [null, token]) {
        const res = await production.gql(query, variables, auth);
        expect(res.errors?.length, what).toBeGreaterThan(0);
        for (const error of res.errors ?? []) {
          expect(error.message).not.toMatch(/did you mean/i);
          expect(error.extensions?.code).toMatch(/^(GRAPHQL_VALIDATION_FAILED|BAD_USER_INPUT)$/);
        }
      }
    });
  }

  it('suggests nothing over a WebSocket either', async () => {
    const client = production.ws(await production.token('alice'));
    const { error } = await collect(client, TYPOS[0]!.query, {});
    expect(JSON.stringify(error)).toMatch(/WORKIN/);
    expect(JSON.stringify(error)).not.toMatch(/did you mean/i);
  });
});

it('a development server still suggests, for the person typing', async () => {
  const res = await development.gql(TYPOS[0]!.query, {}, await development.token('alice'));
  expect(res.errors?.[0]?.message).toMatch(/Did you mean the enum value "WORKING"\?/);
});
